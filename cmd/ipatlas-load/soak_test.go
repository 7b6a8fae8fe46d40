package main

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// samplesOf makes one sample a second with the heap (in MiB), goroutines
// and fds given by f.
func samplesOf(n int, f func(i int) (heapMiB, goroutines, fds float64)) []sample {
	out := make([]sample, n)
	for i := range out {
		h, g, d := f(i)
		out[i] = sample{at: time.Duration(i+1) * time.Second, heap: h * (1 << 20), goroutines: g, fds: d}
	}
	return out
}

func defaultSoakOptions(t *testing.T) soakOptions {
	t.Helper()
	var so soakOptions
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	so.flags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return so
}

// The rule tells a leak from a plateau, a cache filling early, and noise.
func TestJudge(t *testing.T) {
	so := defaultSoakOptions(t)
	tests := []struct {
		name      string
		f         func(i int) (float64, float64, float64)
		unbounded [3]bool // heap, goroutines, fds
	}{
		{"flat", func(i int) (float64, float64, float64) { return 40, 30, 20 }, [3]bool{}},
		{"noise around a plateau", func(i int) (float64, float64, float64) {
			return 40 + 6*math.Sin(float64(i)), 30 + float64(i%7), 20 + float64(i%3)
		}, [3]bool{}},
		{"cache filling in the first third", func(i int) (float64, float64, float64) {
			return 40 + 30*math.Min(float64(i), 8)/8, 30, 20
		}, [3]bool{}},
		{"heap leak, 1 MiB a second", func(i int) (float64, float64, float64) { return 40 + float64(i), 30, 20 }, [3]bool{true}},
		{"goroutine leak, 5 a second", func(i int) (float64, float64, float64) { return 40, 30 + 5*float64(i), 20 }, [3]bool{false, true}},
		{"fd leak, 5 a second", func(i int) (float64, float64, float64) { return 40, 30, 20 + 5*float64(i) }, [3]bool{false, false, true}},
		// Grew by much, but every bit of it in the first half: bounded.
		{"step then flat", func(i int) (float64, float64, float64) {
			if i < 12 {
				return 40, 30, 20
			}
			return 80, 300, 200
		}, [3]bool{}},
		// Rising at the end but within the slack: bounded.
		{"slow creep within the slack", func(i int) (float64, float64, float64) {
			return 40 + 0.1*float64(i), 30 + float64(i)/2, 20
		}, [3]bool{}},
	}
	for _, tt := range tests {
		vs := judge(samplesOf(30, tt.f), so)
		if len(vs) != 3 {
			t.Fatalf("%s: %d verdicts", tt.name, len(vs))
		}
		for i, v := range vs {
			if v.unavailable || v.unbounded != tt.unbounded[i] {
				t.Errorf("%s: %s unbounded %v (unavailable %v; max first third %.1f, last %.1f, rise %.1f), want %v",
					tt.name, v.name, v.unbounded, v.unavailable, v.maxFirst, v.maxLast, v.rise, tt.unbounded[i])
			}
		}
	}
	// Without /proc there is no fd count: the series is not judged.
	vs := judge(samplesOf(30, func(i int) (float64, float64, float64) { return 40, 30, 0 }), so)
	if !vs[2].unavailable || vs[2].unbounded {
		t.Errorf("fds all zero: %+v", vs[2])
	}
}

func TestLeastSquaresSlope(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	if got := leastSquaresSlope(xs, []float64{3, 5, 7, 9, 11}); math.Abs(got-2) > 1e-9 {
		t.Errorf("slope of 2x+1: %v", got)
	}
	if got := leastSquaresSlope([]float64{2, 2}, []float64{1, 5}); got != 0 {
		t.Errorf("vertical points: %v", got)
	}
}

// A short soak against the real server: every class of the mix gets the
// answer it expects, and the report has every series.
func TestSoakSmoke(t *testing.T) {
	smoke(t, []string{"-mode", "soak", "-duration", "3s", "-sample", "250ms", "-rate", "100", "-networks", "300"},
		"verdict: PASS", "heap in use (MiB)", "goroutines", "open fds", "query over quota", "0 missed")
}

// smoke runs the harness with args against a freshly built ipatlas and
// checks that the report holds every one of wants.
func smoke(t *testing.T, args []string, wants ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the smoke test builds and runs the ipatlas binary")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the go tool is not in PATH (%v): CI needs it to build ipatlas for the smoke test", err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := run(ctx, args, &stdout, &stderr)
	out := stdout.String()
	if err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	t.Logf("\n%s", out)
}

// soak refuses a run too short to judge.
func TestSoakTooFewSamples(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-mode", "soak", "-duration", "2s", "-sample", "1s"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "at least 6") {
		t.Errorf("2 samples: %v", err)
	}
}
