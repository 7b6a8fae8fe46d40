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
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
)

// rssBudget is what serving the default dataset may add to the process.
const rssBudget = 300 << 20

// TestRSS measures, in a fresh process so that nothing else in the test
// binary counts, how much resident memory serving the data dir adds:
// open, then two million lookups of random public addresses, which touch
// most pages of the files and fill the record cache and the time-zone
// finders. It is a budget, not a timing.
func TestRSS(t *testing.T) {
	dir := os.Getenv("IPATLAS_TEST_DATA_DIR")
	if dir == "" {
		t.Skip("IPATLAS_TEST_DATA_DIR is not set: set it to a data dir filled by `ipatlas db fetch` to measure memory")
	}
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
	var delta int64 = -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "rss-delta-bytes "); ok {
			delta, _ = strconv.ParseInt(rest, 10, 64)
		}
		if strings.HasPrefix(line, "rss ") {
			t.Log(line)
		}
	}
	if delta < 0 {
		t.Fatalf("child reported no figure:\n%s", out)
	}
	t.Logf("serving %s adds %.1f MB RSS (budget %d MB)", dir, float64(delta)/(1<<20), rssBudget>>20)
	if delta > rssBudget {
		t.Errorf("RSS grew by %.1f MB, over the %d MB budget", float64(delta)/(1<<20), rssBudget>>20)
	}
}

func rssChild(t *testing.T, dir string) {
	runtime.GC()
	debug.FreeOSMemory()
	before := readStatus(t)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	afterOpen := readStatus(t)
	rng := rand.New(rand.NewPCG(1, 1))
	v4 := randomPublicIPv4(1 << 20)
	for i := range 2_000_000 {
		var a netip.Addr
		if i%8 == 7 {
			// IPv6 from the allocated global unicast space.
			var b [16]byte
			b[0] = 0x20 | byte(rng.IntN(2))<<1 | 0x0
			b[1] = byte(rng.IntN(256))
			for j := 2; j < 16; j++ {
				b[j] = byte(rng.IntN(256))
			}
			a = netip.AddrFrom16(b)
		} else {
			a = v4[rng.IntN(len(v4))]
		}
		if _, err := e.Lookup(a, ipatlas.Lang(i&1)); err != nil {
			t.Fatal(err)
		}
	}
	v4 = nil
	// Without forcing anything: what the process holds while serving,
	// garbage awaiting the next cycle included.
	steady := readStatus(t)
	runtime.GC()
	debug.FreeOSMemory()
	after := readStatus(t)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("rss before: %s\n", before)
	fmt.Printf("rss after open: %s\n", afterOpen)
	fmt.Printf("rss after 2M lookups: %s, peak %d MB\n", steady, steady["VmHWM"]>>20)
	fmt.Printf("rss after 2M lookups and a GC: %s, live heap %d MB (heap in use %d MB, released %d MB, GC metadata %d MB, other %d MB)\n",
		after, ms.HeapAlloc>>20, ms.HeapInuse>>20, ms.HeapReleased>>20, ms.GCSys>>20, ms.OtherSys>>20)
	fmt.Printf("rss-delta-bytes %d\n", steady["VmRSS"]-before["VmRSS"])
}

type status map[string]int64

func (s status) String() string {
	return fmt.Sprintf("VmRSS %d MB (anon %d MB, file %d MB)", s["VmRSS"]>>20, s["RssAnon"]>>20, s["RssFile"]>>20)
}

func readStatus(t *testing.T) status {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	s := status{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(k, "Rss") && k != "VmRSS" && k != "VmHWM" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			s[k] = n << 10
		}
	}
	return s
}
