//go:build linux

package geo_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// rssBudget is what serving the default dataset may add to the process's
// resident memory.
const rssBudget = 200 << 20

// TestRSS measures, in a fresh process so that nothing else in the test
// binary counts, how much resident memory serving the data dir adds: open,
// then two million lookups of random public addresses (one in eight IPv6),
// which touch nearly every page of the IPv4 city file and fill the record
// caches and the time-zone finders. It is a budget, not a timing.
//
// The figure checked is the growth of the process's RSS from before Open
// to the end of the lookups, without forcing a collection: what `ps` or a
// cgroup shows for a server in that state, garbage awaiting the next cycle
// included. It counts both kinds of page:
//   - anonymous: the engine's own heap (caches, time-zone finders, garbage
//     within the GC's headroom), stacks and runtime metadata;
//   - file-backed: the pages of the mmap'd MMDB files the lookups touched.
//     These are shared page cache that the kernel can reclaim, and any
//     reader of the same files has them too (a minimal server answering
//     raw lookups from the same files pays the same), so the log names
//     them apart: the rest is what the engine costs over such a server.
//
// With GEO_RSS_HEAP_PROFILE=FILE the child writes a heap profile there
// after the lookups and a GC.
//
// The lookups draw their addresses as they go: a list of them held by the
// test would count in the heap and in the GC's headroom.
func TestRSS(t *testing.T) {
	dir := realdata.Dir(t)
	if raceEnabled {
		t.Skip("built with -race, whose shadow memory multiplies RSS: the budget is checked without it (.ci/run runs `go test -run TestRSS ./internal/geo/`)")
	}
	if os.Getenv("GEO_RSS_CHILD") == "1" {
		rssChild(t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRSS$", "-test.v")
	cmd.Env = append(os.Environ(), "GEO_RSS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var delta, mmdb int64 = -1, -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "rss-delta-bytes "); ok {
			delta, _ = strconv.ParseInt(rest, 10, 64)
		}
		if rest, ok := strings.CutPrefix(line, "mmdb-rss-bytes "); ok {
			mmdb, _ = strconv.ParseInt(rest, 10, 64)
		}
		if strings.HasPrefix(line, "rss ") || strings.HasPrefix(line, "heap ") {
			t.Log(line)
		}
	}
	if delta < 0 || mmdb < 0 {
		t.Fatalf("child reported no figure:\n%s", out)
	}
	t.Logf("serving %s adds %.1f MB RSS (budget %d MB): %.1f MB of MMDB file pages, %.1f MB besides",
		dir, mb(delta), rssBudget>>20, mb(mmdb), mb(delta-mmdb))
	if delta > rssBudget {
		t.Errorf("RSS grew by %.1f MB, over the %d MB budget", mb(delta), rssBudget>>20)
	}
}

func rssChild(t *testing.T, dir string) {
	runtime.GC()
	debug.FreeOSMemory()
	before := readMemory(t)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	afterOpen := readMemory(t)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 2_000_000 {
		var a netip.Addr
		if i%8 == 7 {
			// IPv6 from the allocated global unicast space.
			var b [16]byte
			b[0] = 0x20 | byte(rng.IntN(2))<<1
			b[1] = byte(rng.IntN(256))
			for j := 2; j < 16; j++ {
				b[j] = byte(rng.IntN(256))
			}
			a = netip.AddrFrom16(b)
		} else {
			a = randomPublicIPv4Addr(rng)
		}
		if _, err := e.Lookup(a, ipatlas.Lang(i&1)); err != nil {
			t.Fatal(err)
		}
	}
	// Without forcing anything: what the process holds while serving,
	// garbage awaiting the next cycle included.
	steady := readMemory(t)
	heap := readHeap()
	runtime.GC()
	debug.FreeOSMemory()
	after := readMemory(t)
	live := readHeap()
	if path := os.Getenv("GEO_RSS_HEAP_PROFILE"); path != "" {
		// Where the live heap is: go tool pprof -sample_index=inuse_space.
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	fmt.Printf("rss before: %s\n", before)
	fmt.Printf("rss after open: %s\n", afterOpen)
	fmt.Printf("rss after 2M lookups: %s, peak %.0f MB\n", steady, mb(steady.peak))
	fmt.Printf("heap after 2M lookups: %s\n", heap)
	fmt.Printf("rss after 2M lookups and a GC: %s\n", after)
	fmt.Printf("heap after 2M lookups and a GC: %s\n", live)
	fmt.Printf("rss-delta-bytes %d\n", steady.rss-before.rss)
	fmt.Printf("mmdb-rss-bytes %d\n", steady.mmdb)
}

// randomPublicIPv4Addr draws uniformly from the public IPv4 space.
func randomPublicIPv4Addr(rng *rand.Rand) netip.Addr {
	for {
		v := rng.Uint32()
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if _, special := netaddr.Classify(a); !special {
			return a
		}
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// memory is the process's resident memory as the kernel counts it.
type memory struct {
	rss, anon, file, pss int64 // smaps_rollup: Rss, Anonymous, Rss-Anonymous, Pss
	mmdb                 int64 // resident pages of mappings of *.mmdb files
	peak                 int64 // VmHWM
}

func (m memory) String() string {
	return fmt.Sprintf("RSS %.0f MB (anonymous %.0f MB, file-backed %.0f MB of which MMDB files %.0f MB), PSS %.0f MB",
		mb(m.rss), mb(m.anon), mb(m.file), mb(m.mmdb), mb(m.pss))
}

func readMemory(t *testing.T) memory {
	t.Helper()
	var m memory
	rollup := smapsFields(t, "/proc/self/smaps_rollup")
	m.rss, m.anon, m.pss = rollup["Rss"], rollup["Anonymous"], rollup["Pss"]
	m.file = m.rss - m.anon
	m.peak = smapsFields(t, "/proc/self/status")["VmHWM"]
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	var mapping string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && !strings.HasSuffix(f[0], ":") { // a mapping's header
			mapping = ""
			if len(f) >= 6 {
				mapping = f[5]
			}
			continue
		}
		if len(f) == 3 && f[0] == "Rss:" && strings.HasSuffix(mapping, ".mmdb") {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			m.mmdb += n << 10
		}
	}
	return m
}

// smapsFields reads the "Name: N kB" lines of a /proc file.
func smapsFields(t *testing.T, path string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if ok && len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			out[k] = n << 10
		}
	}
	return out
}

// heapStats is the Go runtime's view of its memory (runtime/metrics).
type heapStats map[string]uint64

var heapMetrics = []string{
	"/gc/heap/live:bytes",                // marked live by the last GC
	"/gc/heap/goal:bytes",                // the next GC starts there
	"/memory/classes/heap/objects:bytes", // live and not yet swept garbage
	"/memory/classes/heap/unused:bytes",  // free slots in spans in use
	"/memory/classes/heap/free:bytes",    // free spans not yet returned
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
}

func readHeap() heapStats {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, n := range heapMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	out := heapStats{}
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			out[x.Name] = x.Value.Uint64()
		}
	}
	return out
}

func (h heapStats) String() string {
	f := func(name string) float64 { return mb(int64(h[name])) }
	return fmt.Sprintf("live at last GC %.1f MB, GC goal %.1f MB; objects %.1f MB, unused in spans %.1f MB, free spans %.1f MB, released %.1f MB; stacks %.1f MB, metadata %.1f MB",
		f("/gc/heap/live:bytes"), f("/gc/heap/goal:bytes"),
		f("/memory/classes/heap/objects:bytes"), f("/memory/classes/heap/unused:bytes"),
		f("/memory/classes/heap/free:bytes"), f("/memory/classes/heap/released:bytes"),
		f("/memory/classes/heap/stacks:bytes"),
		f("/memory/classes/metadata/other:bytes")+f("/memory/classes/metadata/mspan/inuse:bytes"))
}
