package sketchcol

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReviewTagWindow and TestReviewTagWindow2: a Batch committed while
// a locked add reads a header must not leave a stale header cached as
// current (the cache tag is taken before the read).
func TestReviewTagWindow(t *testing.T) {
	ts := openTestStore(t, nil, nil)
	st := ts.Store
	key := []byte("k")
	_, err := st.BFAdd(key, []byte("pre"))
	require.NoError(t, err)
	const n = 8000
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i += 400 {
			var its [][]byte
			for j := i; j < i+400; j++ {
				its = append(its, []byte(fmt.Sprintf("s%d", j)))
			}
			if _, err := st.BFMAdd(key, its...); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i += 20 {
			b := st.NewBatch()
			var its [][]byte
			for j := i; j < i+20; j++ {
				its = append(its, []byte(fmt.Sprintf("b%d", j)))
			}
			if err := b.BFAdd(key, its...); err != nil {
				t.Error(err)
				return
			}
			if err := b.Commit(nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	var its [][]byte
	for i := 0; i < n; i++ {
		its = append(its, []byte(fmt.Sprintf("s%d", i)), []byte(fmt.Sprintf("b%d", i)))
	}
	count := func() int {
		ex, err := st.BFMExists(key, its...)
		require.NoError(t, err)
		m := 0
		for _, e := range ex {
			if !e {
				m++
			}
		}
		return m
	}
	m := count()
	var cached int
	if e := st.cachedHLL(st.stripe(key), key); e != nil && e.paged != nil {
		cached = len(e.paged.counts)
	}
	info, _ := st.BFInfo(key)
	t.Logf("cached layers %d, DB layers %d; false negatives with cache %d", cached, info.Filters, m)
	st.ForgetCached(key)
	t.Logf("after ForgetCached: %d", count())
	if m > 0 {
		t.Errorf("false negatives from the cached header: %d", m)
	}
}
