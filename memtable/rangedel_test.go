package memtable

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

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
					t.Errorf("seq %d published, MaxCovering(%s) = %d", s, k, got)
					return
				}
				checks.Add(1)
			}
		})
	}
	for i := uint64(1); i <= n; i++ {
		m.Add(i, base.KindRangeDelete, []byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("key%05d\x00", i)))
		published.Store(i)
	}
	wg.Wait()
	if checks.Load() == 0 {
		t.Fatal("no reader check ran")
	}
	if st := m.Stats(); st.RangeDels != n || st.MaxSeq != n || m.Empty() {
		t.Fatalf("stats %+v", st)
	}
}
