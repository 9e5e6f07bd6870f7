package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
)

// TestZipfianMatchesItsLaw checks the zipfian generator against
// P(i) = 1/((i+1)^θ · ζ(n, θ)): Gray et al.'s method (YCSB's) draws items 0
// and 1 exactly by that law and approximates the rest (within 20% here),
// and the popularity falls with the rank.
func TestZipfianMatchesItsLaw(t *testing.T) {
	const n, draws = 1000, 400000
	z := newZipfian(n, ycsbZipfianConstant)
	r := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, n)
	for range draws {
		counts[z.next(r)]++
	}
	for i := range 5 {
		want := draws / (math.Pow(float64(i+1), ycsbZipfianConstant) * z.zetan)
		tol := 5 * math.Sqrt(want)
		if i >= 2 {
			tol = 0.2 * want
		}
		if got := float64(counts[i]); math.Abs(got-want) > tol {
			t.Errorf("item %d drawn %v times, want about %.0f", i, got, want)
		}
		if i > 0 && counts[i] >= counts[i-1] {
			t.Errorf("item %d drawn %d times, not fewer than item %d (%d)", i, counts[i], i-1, counts[i-1])
		}
	}
}

// TestScrambledAndLatestStayInRange checks that both choosers return
// records that exist, including as the record count grows.
func TestScrambledAndLatestStayInRange(t *testing.T) {
	var records atomic.Int64
	records.Store(100)
	r := rand.New(rand.NewPCG(3, 4))
	sc := newScrambledZipfian(newZipfianZeta(scrambledItems, ycsbZipfianConstant, scrambledZeta), &records, 20000/100)
	la := skewedLatest{newZipfian(100, ycsbZipfianConstant), &records}
	newest := 0
	for i := range 20000 {
		if i%100 == 0 {
			records.Add(1)
		}
		n := int(records.Load())
		if v := sc.next(r); v < 0 || v >= n {
			t.Fatalf("scrambled: %d outside [0, %d)", v, n)
		}
		v := la.next(r)
		if v < 0 || v >= n {
			t.Fatalf("latest: %d outside [0, %d)", v, n)
		}
		if v == n-1 {
			newest++
		}
	}
	if newest < 20000/10 {
		t.Errorf("latest chose the newest record %d times of 20000: not skewed to the latest", newest)
	}
}

// TestYCSBAndSyncWriteRun runs both modes on tiny inputs on every default
// engine: no error, and no wrong result.
func TestYCSBAndSyncWriteRun(t *testing.T) {
	var out bytes.Buffer
	if err := runYCSBCmd([]string{"-n=2000", "-ops=1500", "-threads=2", "-rounds=2", "-warmup=0.5", "-dir=" + t.TempDir()}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "each round starts with 50% of its operations in untimed point reads") {
		t.Errorf("report does not name the warm-up:\n%s", out.String())
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[1] == "wrong" && f[2] == "results" {
			rows++
			if strings.Join(f[3:], " ") != "0 0 0 0" {
				t.Errorf("wrong results: %s", line)
			}
		}
	}
	if rows != len(ycsbWorkloads) {
		t.Errorf("%d wrong-results rows, want one per workload:\n%s", rows, out.String())
	}
	for _, wl := range []string{"A ops/s", "F ops/s", "E ops/s"} {
		if !strings.Contains(out.String(), wl) {
			t.Errorf("report lacks %q:\n%s", wl, out.String())
		}
	}
	out.Reset()
	if err := runSyncWriteCmd([]string{"-ops=200", "-threads=1,4", "-dir=" + t.TempDir()}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "4: WAL fsyncs/op") {
		t.Errorf("syncwrite report:\n%s", out.String())
	}
	if _, err := parseYCSBFlags([]string{"-warmup=-1"}); err == nil {
		t.Error("a negative -warmup was accepted")
	}
	if _, err := parseYCSBFlags([]string{"-engines=pebble-l6f", "-baseline=pebble-l6f"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ycsbSelect(ycsbOptions{engines: "pebble-l6f", baseline: "pebble-l6f", workloads: "A"}); err == nil {
		t.Error("ycsb accepted pebble-l6f, whose reused Get iterator would not see the writes")
	}
}

// TestScrambledPopularityHoldsUnderInserts checks that the popular records
// stay popular while inserts grow the record count (workload E inserts
// one record in 20 operations): the most popular record takes about
// 1/zeta = 3.8% of the draws. Hashing onto the current count instead moves
// it at every insert, and no record gets more than a few draws.
func TestScrambledPopularityHoldsUnderInserts(t *testing.T) {
	var records atomic.Int64
	records.Store(100000)
	const draws = 40000
	r := rand.New(rand.NewPCG(5, 6))
	sc := newScrambledZipfian(newZipfianZeta(scrambledItems, ycsbZipfianConstant, scrambledZeta), &records, draws/20)
	counts := map[int]int{}
	for i := range draws {
		if i%20 == 0 {
			records.Add(1)
		}
		counts[sc.next(r)]++
	}
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	if top < draws/50 {
		t.Errorf("the most popular record got %d of %d draws: popularity moved with the inserts", top, draws)
	}
}
