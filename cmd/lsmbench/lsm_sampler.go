package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sievedb/sieve"
)

// lsmSampler watches the LSM while a write benchmark runs: every interval
// it records the number of L0 tables and immutable memtables, so the
// report can say whether background flushes and compactions kept up with
// the writers (an L0 that only grows, or sits at L0StopWritesTrigger with
// stalls, is compaction falling behind).
type lsmSampler struct {
	db       *sieve.DB
	interval time.Duration
	done     chan struct{}
	wg       sync.WaitGroup
	l0, imm  []int64
}

// lsmSampleInterval is how often an lsmSampler looks at the LSM.
const lsmSampleInterval = 100 * time.Millisecond

func startLSMSampler(db *sieve.DB, interval time.Duration) *lsmSampler {
	s := &lsmSampler{db: db, interval: interval, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *lsmSampler) sample() {
	m := s.db.Metrics()
	s.l0 = append(s.l0, m.Levels[0].NumFiles)
	s.imm = append(s.imm, m.MemTable.Immutable)
}

// stop ends the sampling (with a last sample) and returns the report's
// note: L0 tables and immutable memtables over the run, the L0 count at
// each tenth of it, and the stalls and slowdowns between before and after.
func (s *lsmSampler) stop(before, after *sieve.Metrics) string {
	close(s.done)
	s.wg.Wait()
	s.sample()
	maxOf := func(v []int64) (m int64) {
		for _, x := range v {
			m = max(m, x)
		}
		return m
	}
	var sum int64
	for _, x := range s.l0 {
		sum += x
	}
	var tenths []string
	for k := 1; k <= 10; k++ {
		tenths = append(tenths, fmt.Sprint(s.l0[min(len(s.l0)-1, len(s.l0)*k/10)]))
	}
	return fmt.Sprintf("LSM while writing (%d samples, every %v): L0 tables max %d, mean %.1f, at each tenth of the run %s; immutable memtables max %d; write stalls %d (%.3fs), slowdowns %d",
		len(s.l0), s.interval, maxOf(s.l0), float64(sum)/float64(len(s.l0)), strings.Join(tenths, " "), maxOf(s.imm),
		after.Stall.Count-before.Stall.Count, (after.Stall.Duration - before.Stall.Duration).Seconds(), after.Stall.Slowdowns-before.Stall.Slowdowns)
}
