package names

import (
	"runtime"
	"strings"
	"testing"
	"unicode"

	"github.com/ipatlas/ipatlas/internal/names/fold"
)

func TestWorldProvince(t *testing.T) {
	for _, c := range []struct{ country, english, want string }{
		{"US", "California", "加利福尼亚州"},
		{"us", "california", "加利福尼亚州"},
		{"US", "New York", "纽约州"}, // the state, not the city 纽约
		{"AU", "New South Wales", "新南威尔士州"},
		{"RU", "Moscow", "莫斯科"},
		{"JP", "Tokyo", "东京都"},
		{"JP", "Tokyo-to", "东京都"},         // generic "-to" stripped
		{"JP", "Osaka Prefecture", "大阪府"}, // generic word stripped
		{"BR", "Sao Paulo", "圣保罗州"},
		{"BR", "São Paulo", "圣保罗州"},
		{"BR", "Federal District", "联邦区"},
		{"KR", "Gyeonggi-do", "京畿道"},
		{"KR", "Gyeonggi Province", "京畿道"},
		{"FR", "Île-de-France", "法兰西岛大区"},
		{"FR", "ILE DE FRANCE", "法兰西岛大区"},
		{"DE", "North Rhine-Westphalia", "北莱茵-威斯特法伦州"},
		{"VN", "Binh Duong Province", "平阳省"},
		{"VN", "Bình Dương", "平阳省"}, // ư with a second accent
		{"GB", "England", "英格兰"},
		// Places without ISO 3166-2 codes.
		{"HK", "Kowloon", "九龙"},
		{"HK", "Kowloon City", "九龙城区"}, // a district, not the region 九龙
		{"HK", "Kwai Tsing District", "葵青区"},
		{"HK", "Central and Western", "中西区"},
		{"MO", "Nossa Senhora do Carmo", "嘉模堂区"},
		{"TW", "Taiwan", "台湾"},
		{"TW", "Taipei", "台北市"},
		{"TW", "Taipei City", "台北市"},
		// A code ISO 3166-2 gave to another division: the old name keeps
		// the old division's Chinese name, the new one gets its own.
		{"MA", "Casablanca-Settat", "卡萨布兰卡-塞塔特大区"},
		{"MA", "Meknès-Tafilalet", "梅克内斯-塔菲拉勒特大区"},
		// Unknown or ambiguous: the English name, never a guess.
		{"UZ", "Tashkent Oblast", "Tashkent Oblast"}, // stripped: the city 塔什干 or its province
		{"UZ", "Tashkent Region", "塔什干州"},            // the data's spelling, an alias of UZ-TO
		{"TW", "Chiayi", "Chiayi"},                   // 嘉义市 or 嘉义县
		{"US", "Nowhere", "Nowhere"},
		{"US", "", ""},
		{"ZZ", "California", "California"},
		{"USA", "California", "California"},
		{"US", strings.Repeat("California", 20), strings.Repeat("California", 20)},
		{"US", "---", "---"},
	} {
		if got := Province(c.country, c.english, zh); got != c.want {
			t.Errorf("Province(%q, %q, zh) = %q, want %q", c.country, c.english, got, c.want)
		}
		if got := Province(c.country, c.english, en); got != c.english {
			t.Errorf("Province(%q, %q, en) = %q, want the English name unchanged", c.country, c.english, got)
		}
	}
}

// TestSubdivisionTable checks the generated table as a whole: sorted
// unique keys for the binary search, keys that are their own fold, codes of
// the key's country, and Chinese names made of Han characters.
func TestSubdivisionTable(t *testing.T) {
	if len(subdivisions) < 4000 {
		t.Fatalf("only %d subdivision keys", len(subdivisions))
	}
	var buf fold.Buf
	for i, s := range subdivisions {
		if i > 0 && subdivisions[i-1].key >= s.key {
			t.Errorf("key %q after %q: not sorted or not unique", s.key, subdivisions[i-1].key)
		}
		if len(s.key) < 3 || !isUpperCC(s.key[:2]) {
			t.Errorf("key %q: no country code", s.key)
			continue
		}
		k := strings.TrimPrefix(s.key[2:], fold.StrippedMark)
		if full, _, ok := fold.Keys(&buf, k); !ok || string(full) != k {
			t.Errorf("key %q is not a fold key", s.key)
		}
		if s.code != "" && !strings.HasPrefix(s.code, s.key[:2]+"-") {
			t.Errorf("key %q: code %q of another country", s.key, s.code)
		}
		for _, r := range s.chinese {
			if !unicode.Is(unicode.Han, r) && r != '-' && r != '·' {
				t.Errorf("key %q: Chinese name %q has %q", s.key, s.chinese, r)
				break
			}
		}
		if got := lookupSubdivision(s.key[:2], k); got == nil || got.chinese != s.chinese && k == s.key[2:] {
			t.Errorf("key %q does not find itself", s.key)
		}
	}
}

func isUpperCC(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}

// TestSubdivisionMemory: the table is constant data compiled into the
// binary, so using it costs no heap.
func TestSubdivisionMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range subdivisions {
		sink = worldProvince(subdivisions[i].key[:2], strings.TrimPrefix(subdivisions[i].key[2:], fold.StrippedMark))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("%d keys; heap in use before %d B, after every key looked up %d B", len(subdivisions), before.HeapAlloc, after.HeapAlloc)
	if after.Mallocs-before.Mallocs > 100 {
		t.Errorf("looking up every key made %d allocations", after.Mallocs-before.Mallocs)
	}
}
