package geo

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// TestRealServingBuildsNoFinder holds a serving engine on the real dataset,
// whose city files have zone indexes, to never building the time-zone
// finders (tens of MB of polygons): Open, Watch as `ipatlas serve` runs
// it, then 100,000 random public addresses (one in eight IPv6) answered
// both as the encoded answer and as the record, in both languages. It runs
// in a fresh process, since other tests of the package build the finders.
//
//	IPATLAS_TEST_DATA_DIR=DIR go test -run TestRealServingBuildsNoFinder -v ./internal/geo/
func TestRealServingBuildsNoFinder(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	if os.Getenv("GEO_FINDER_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRealServingBuildsNoFinder$", "-test.v")
		cmd.Env = append(os.Environ(), "GEO_FINDER_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	if n := finderBuilds.Load(); n != 0 {
		t.Fatalf("%d finders built before the engine opened", n)
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.needsTimeZones() {
		t.Fatal("the real dataset's city files lack zone indexes: run `ipatlas db fetch` again")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Watch(ctx) }()
	rng := rand.New(rand.NewPCG(7, 7))
	var buf []byte
	zones := 0
	for i := range 100_000 {
		a := randomPublicAddr(rng, i%8 == 0)
		lang := ipatlas.English
		if i%2 == 1 {
			lang = ipatlas.Chinese
		}
		if buf, err = e.AppendJSON(buf[:0], a, lang); err != nil {
			t.Fatal(err)
		}
		rec, err := e.Lookup(a, lang)
		if err != nil {
			t.Fatal(err)
		}
		if rec.TimeZone != "" {
			zones++
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if zones == 0 {
		t.Fatal("no record had a time zone: the lookups tell nothing")
	}
	if n := finderBuilds.Load(); n != 0 {
		t.Errorf("serving built %d time-zone finders; want none (the zone indexes answer)", n)
	}
	if n := finderLookups.Load(); n != 0 {
		t.Errorf("%d lookups reached the finders", n)
	}
	t.Logf("100000 addresses, %d records with a time zone, %d finders built", zones, finderBuilds.Load())
}
