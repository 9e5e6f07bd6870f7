package memtable

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/base"
)

// TestRangeDelsConcurrent: one writer adds range tombstones while readers
// fragment and query them (run with -race): a reader that has seen
// sequence number s published sees every tombstone up to s.
func TestRangeDelsConcurrent(t *testing.T) {
	m := NewWithFilter(1 << 16)
	var published atomic.Uint64
	const n = 2000
	var wg sync.WaitGroup
	var checks atomic.Int64
	for r := 0; r < 4; r++ {
		wg.Go(func() {
			for published.Load() < n {
				s := published.Load()
				if s == 0 {
					continue
				}
				// Tombstone i (seq i) covers key%05d of i alone.
				k := []byte(fmt.Sprintf("key%05d", s))
				if got := m.RangeDels().MaxCovering(k, s); got != s {
					t.Errorf("seq %d published, RangeDels().MaxCovering(%s) = %d", s, k, got)
					return
				}
				// Another key, through the tail scan most of the time.
				k2 := []byte(fmt.Sprintf("key%05d", 1+s/2))
				if got := m.MaxCovering(k2, s); got != 1+s/2 {
					t.Errorf("seq %d published, MaxCovering(%s) = %d", s, k2, got)
					return
				}
				checks.Add(1)
			}
		})
	}
	for i := uint64(1); i <= n; i++ {
		m.Add(i, base.KindRangeDelete, []byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("key%05d\x00", i)))
		published.Store(i)
		if i%100 == 0 {
			// Let the readers in: wait (a little) for a check at this seq.
			for c, deadline := checks.Load(), time.Now().Add(100*time.Millisecond); checks.Load() == c && time.Now().Before(deadline); {
				runtime.Gosched()
			}
		}
	}
	wg.Wait()
	if checks.Load() == 0 {
		t.Fatal("no reader check ran")
	}
	if st := m.Stats(); st.RangeDels != n || st.MaxSeq != n || m.Empty() {
		t.Fatalf("stats %+v", st)
	}
}

// TestMaxCoveringTail: MaxCovering agrees with the fragmented list
// whether the tombstones are in it, in the tail scanned one by one, or
// beyond the tail (a rebuild), at every read sequence number.
func TestMaxCoveringTail(t *testing.T) {
	m := New()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	seq := uint64(0)
	add := func(n int) {
		for j := 0; j < n; j++ {
			seq++
			a := int(seq*7) % 90
			m.Add(seq, base.KindRangeDelete, key(a), key(a+1+int(seq%9)))
		}
	}
	add(10)
	m.RangeDels() // build the list of the first ten
	for _, n := range []int{5, 27, 1, 96} {
		add(n)
		// Query before anything rebuilds the list.
		for i := 0; i < 100; i++ {
			for _, rs := range []uint64{seq, seq / 2, 3} {
				got := m.MaxCovering(key(i), rs)
				want := brute(m, key(i), rs)
				if got != want {
					t.Fatalf("after %d more: MaxCovering(%s, %d) = %d, want %d", n, key(i), rs, got, want)
				}
			}
		}
	}
}

// brute is MaxCovering computed over the raw tombstones.
func brute(m *MemTable, k []byte, rs uint64) uint64 {
	var best uint64
	for _, t := range m.rangeDels {
		if t.Seq <= rs && t.Seq > best && string(t.Start) <= string(k) && string(k) < string(t.End) {
			best = t.Seq
		}
	}
	return best
}
