package sieve

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGetWithWriter times every Get of present keys on a flushed and
// compacted database of benchReadN keys, alone, while one goroutine
// rewrites random keys (their own values) as fast as it can, and while it
// does so at 200k Puts a second: peers scaling's "1 reader + 1 writer"
// phases, in-process. It reports the Gets' p50, p99 and p99.9 latencies
// and the writer's Puts per second; the database is built per
// sub-benchmark (the writer changes it), so run it with a fixed count,
// e.g. -benchtime=1000000x.
func BenchmarkGetWithWriter(b *testing.B) {
	for _, sub := range []struct {
		name   string
		writer bool
		rate   int
	}{{"alone", false, 0}, {"writer", true, 0}, {"writer-200k", true, 200000}} {
		b.Run(sub.name, func(b *testing.B) { benchGetWithWriter(b, sub.writer, sub.rate) })
	}
}

// benchGetWithWriter is one BenchmarkGetWithWriter case; rate > 0 paces
// the writer to that many Puts a second.
func benchGetWithWriter(b *testing.B, writer bool, rate int) {
	db, err := buildCompactedBenchDB(filepath.Join(b.TempDir(), "db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	vals := benchValues()
	var stop atomic.Bool
	var puts atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{})
	if writer {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(7, 11))
			key := make([]byte, 16)
			t0 := time.Now()
			for first := true; !stop.Load(); first = false {
				if rate > 0 {
					if ahead := time.Duration(puts.Load())*time.Second/time.Duration(rate) - time.Since(t0); ahead > 0 {
						time.Sleep(ahead)
					}
				}
				i := rng.Uint64N(benchReadN)
				if err := db.Put(putBenchKey(key, 2*scatter(i, benchReadN)), vals[i%uint64(len(vals))], NoSync); err != nil {
					b.Error(err)
					return
				}
				puts.Add(1)
				if first {
					close(started)
				}
			}
		}()
		<-started
	}
	lat := make([]int64, b.N)
	key := make([]byte, 16)
	b.ResetTimer()
	begin := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := db.Get(putBenchKey(key, 2*scatter(uint64(i)*7919, benchReadN))); err != nil {
			b.Fatal(err)
		}
		lat[i] = int64(time.Since(t0))
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
	b.ReportMetric(at(0.999), "p99.9-ns")
	if writer {
		b.ReportMetric(float64(puts.Load())/elapsed.Seconds(), "puts/s")
	}
}
