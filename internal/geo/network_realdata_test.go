package geo_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// TestRealNetwork holds the network of answers of the real dataset, with
// the built-in privacy lists, to its definition (checkNetwork) for
// random public addresses, IPv4 and IPv6:
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
	bits := map[bool][]int{}
	for range 2000 {
		a := randomPublicAddr(rng)
		n := checkNetwork(t, e, ps, rng, a)
		bits[a.Is4()] = append(bits[a.Is4()], n.Bits())
		if t.Failed() {
			return
		}
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
