package geo_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// TestRealNetwork holds the network of answers of the real dataset, with
// the built-in privacy lists, to its definition for random public
// addresses, IPv4 and IPv6. Every address of the network has the same
// answer (networkHolds), always. The network is the largest such
// (networkIsLargest) as far as the files tell: where neighbouring networks
// of a file hold distinct records that compose the same answer (records
// that differ in what the answer does not show), it stops at the file's
// boundary, which a random sample of 2,000 meets a few times at most; more
// than 1% would be a bound the engine draws without cause.
//
//	IPATLAS_TEST_DATA_DIR=~/.cache/ipatlas-ci/data go test -run TestRealNetwork -v ./internal/geo/
func TestRealNetwork(t *testing.T) {
	realdata.Whole(t)
	dir := realdata.Dir(t)
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ps := pieces(t, e)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const samples = 2000
	bits := map[bool][]int{}
	notLargest := 0
	for range samples {
		a := randomPublicAddr(rng)
		n, ok := networkHolds(t, e, rng, a)
		if !ok {
			return
		}
		if !networkIsLargest(t, e, ps, a, n) {
			notLargest++
			t.Logf("%s: %s, and the network one bit shorter has the same answer", a, n)
		}
		bits[a.Is4()] = append(bits[a.Is4()], n.Bits())
	}
	if notLargest > samples/100 {
		t.Errorf("%d of %d networks are not the largest with their answer; at most %d expected", notLargest, samples, samples/100)
	}
	for _, v4 := range []bool{true, false} {
		b := bits[v4]
		hist := map[int]int{}
		for _, x := range b {
			hist[x]++
		}
		t.Logf("IPv4 %v: %d addresses, networks by length %v", v4, len(b), hist)
	}
}
