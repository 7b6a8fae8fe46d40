package main

// The on-disk lookup cache of the lookup command.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// diskCache keeps lookups across runs: one JSON file per address and
// language, holding the result as the client returned it.
type diskCache struct {
	dir string
	ttl time.Duration
	now func() time.Time
}

type diskEntry struct {
	Lang   string              `json:"lang"`
	Result client.LookupResult `json:"result"`
}

func (d diskCache) path(addr string, lang ipatlas.Lang) string {
	// IPv6 text has colons, which some file systems refuse.
	return filepath.Join(d.dir, strings.ReplaceAll(addr, ":", "_")+"."+lang.String()+".json")
}

// key is the canonical address, or "" when ip is not one (the client will
// say why).
func (d diskCache) key(ip string) string {
	a, err := netaddr.Parse(ip)
	if err != nil {
		return ""
	}
	return a.String()
}

func (d diskCache) get(ip string, lang ipatlas.Lang) (client.LookupResult, bool) {
	addr := d.key(ip)
	if d.dir == "" || d.ttl == 0 || addr == "" {
		return client.LookupResult{}, false
	}
	p := d.path(addr, lang)
	b, err := os.ReadFile(p)
	if err != nil {
		return client.LookupResult{}, false
	}
	var ent diskEntry
	if json.Unmarshal(b, &ent) != nil || ent.Lang != lang.String() {
		os.Remove(p)
		return client.LookupResult{}, false
	}
	age := d.now().Sub(ent.Result.FetchedAt)
	if age < 0 || age >= d.ttl {
		os.Remove(p)
		return client.LookupResult{}, false
	}
	ent.Result.Cached = true
	return ent.Result, true
}

// put stores r; failures only cost a future request, so they are ignored.
func (d diskCache) put(ip string, lang ipatlas.Lang, r client.LookupResult) {
	if d.dir == "" || d.ttl == 0 {
		return
	}
	addr := d.key(ip)
	if addr == "" {
		return
	}
	b, err := json.Marshal(diskEntry{Lang: lang.String(), Result: r})
	if err != nil {
		return
	}
	if os.MkdirAll(d.dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(d.dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), d.path(addr, lang)) != nil {
		os.Remove(f.Name())
	}
}

// prune removes expired entries, so the directory does not grow forever
// with addresses looked up once.
func (d diskCache) prune() {
	if d.dir == "" || d.ttl == 0 {
		return
	}
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if d.now().Sub(info.ModTime()) > client.MaxCacheTTL+time.Hour {
			os.Remove(filepath.Join(d.dir, ent.Name()))
		}
	}
}
