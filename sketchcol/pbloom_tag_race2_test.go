package sketchcol

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReviewTagWindow2(t *testing.T) {
	hits := 0
	for trial := 0; trial < 150; trial++ {
		ts := openTestStore(t, nil, nil)
		st := ts.Store
		key := []byte("k")
		var pre [][]byte
		for i := 0; i < 99; i++ {
			pre = append(pre, []byte(fmt.Sprintf("p%d", i)))
		}
		_, err := st.BFMAdd(key, pre...)
		require.NoError(t, err)
		var dup [][]byte
		for i := 0; i < 30; i++ {
			dup = append(dup, pre...)
		}
		dup = append(dup, []byte("snew"))
		var bits [][]byte
		for i := 0; i < 300; i++ {
			bits = append(bits, []byte(fmt.Sprintf("b%d", i)))
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = st.BFMAdd(key, dup...) }()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(trial%20) * 20 * time.Microsecond)
			b := st.NewBatch()
			_ = b.BFAdd(key, bits...)
			_ = b.Commit(nil)
		}()
		wg.Wait()
		ex, err := st.BFMExists(key, bits...)
		require.NoError(t, err)
		m := 0
		for _, e := range ex {
			if !e {
				m++
			}
		}
		if m > 0 {
			hits++
			e := st.cachedHLL(st.stripe(key), key)
			info, _ := st.BFInfo(key)
			if hits < 4 {
				t.Logf("trial %d: %d false negatives; cached layers %d, DB layers %d", trial, m, len(e.paged.counts), info.Filters)
			}
		}
	}
	if hits > 0 {
		t.Errorf("%d trials of 150 with false negatives", hits)
	}
}
