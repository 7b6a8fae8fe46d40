package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/names/fold"
)

func TestExplore(t *testing.T) {
	places, err := loadGeoNames("/tmp/npm", "")
	if err != nil {
		t.Fatal(err)
	}
	nHan, nZh, ties, nkeys := 0, 0, 0, 0
	tieEx := []string{}
	for _, p := range places {
		p.forms = hanForms(p.han)
	}
	use := charUse(places)
	for _, p := range places {
		nkeys += len(p.keys)
		if len(p.han) == 0 {
			continue
		}
		nHan++
		p.zh = chooseChinese(p.forms, use)
		if p.zh != "" {
			nZh++
			cnt := map[string]int{}
			for _, c := range p.han {
				if s, ok := simplified(c); ok {
					cnt[s]++
				}
			}
			if len(cnt) > 1 {
				max, nmax := 0, 0
				for _, n := range cnt {
					if n > max {
						max, nmax = n, 1
					} else if n == max {
						nmax++
					}
				}
				if nmax > 1 {
					ties++
					if len(tieEx) < 150 && p.pop > 20000 {
						tieEx = append(tieEx, fmt.Sprintf("%s %s %d %v -> %s", p.country, p.name, p.pop, cnt, p.zh))
					}
				}
			}
		}
	}
	t.Logf("places %d, with han %d, with zh %d, ties %d, keys %d", len(places), nHan, nZh, ties, nkeys)
	for _, s := range tieEx {
		t.Log(s)
	}
	// index
	type ck struct{ cc, key string }
	idx := map[ck][]*gnPlace{}
	for _, p := range places {
		for _, k := range p.keys {
			idx[ck{p.country, k}] = append(idx[ck{p.country, k}], p)
		}
	}
	f, _ := os.Open("/tmp/cities-explore/dbip.tsv")
	sc := bufio.NewScanner(f)
	var total, named, matchedAny int
	hist := map[int]int{}
	histBig := map[int]int{}
	miss := map[string]int{}
	for sc.Scan() {
		r := strings.Split(sc.Text(), "\t")
		if r[1] == "CN" || r[1] == "" {
			continue
		}
		n, _ := strconv.Atoi(r[0])
		lat, _ := strconv.ParseFloat(r[5], 64)
		lon, _ := strconv.ParseFloat(r[6], 64)
		city := r[4]
		if i := strings.Index(city, " ("); i > 0 {
			city = city[:i]
		}
		total += n
		cands := idx[ck{r[1], fold.String(city)}]
		best, bd := (*gnPlace)(nil), 1e9
		for _, p := range cands {
			if d := distanceKm(lat, lon, p.lat, p.lon); d < bd {
				best, bd = p, d
			}
		}
		if best == nil {
			miss[r[1]+" "+city] += n
			continue
		}
		matchedAny += n
		b := int(bd / 5)
		if b > 40 {
			b = 40
		}
		if best.pop > 1000000 {
			histBig[b] += n
		} else {
			hist[b] += n
		}
		if best.zh != "" && bd < 50 {
			named += n
		} else {
			miss[r[1]+" "+city] += n
		}
	}
	t.Logf("total %d matched %d (%.1f%%) named<50km %d (%.1f%%)", total, matchedAny, 100*float64(matchedAny)/float64(total), named, 100*float64(named)/float64(total))
	for b := 0; b <= 40; b++ {
		t.Logf("dist %3d-%3d km: %8d small  %8d big", b*5, b*5+5, hist[b], histBig[b])
	}
	type kv struct {
		k string
		n int
	}
	var ms []kv
	for k, n := range miss {
		ms = append(ms, kv{k, n})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].n > ms[j].n })
	for i := 0; i < 60 && i < len(ms); i++ {
		c := ms[i].k
		zh := ""
		for _, p := range idx[ck{c[:2], fold.String(c[3:])}] {
			zh += fmt.Sprintf(" [%s %s %d %v]", p.name, p.zh, p.pop, p.han)
		}
		t.Logf("miss %7d %s%s", ms[i].n, c, zh)
	}
}
