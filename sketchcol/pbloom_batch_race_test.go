package sketchcol

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Concurrent Store.BFAdd (locked) and Batch.BFAdd (blind) on one key, new
// or existing: no item of either may be lost (a creation once range-deleted
// the pages a concurrent Batch had written).
func TestReviewBatchVsStoreBFAdd(t *testing.T)    { reviewBatchVsStore(t, false) }
func TestReviewBatchVsStoreBFAddPre(t *testing.T) { reviewBatchVsStore(t, true) }

func reviewBatchVsStore(t *testing.T, pre bool) {
	ts := openTestStore(t, nil, nil)
	st := ts.Store
	key := []byte("k")
	const n = 5000
	if pre {
		_, err := st.BFAdd(key, []byte("pre"))
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if _, err := st.BFAdd(key, []byte(fmt.Sprintf("s%d", i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i += 10 {
			b := st.NewBatch()
			var its [][]byte
			for j := i; j < i+10; j++ {
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
	ex, err := st.BFMExists(key, its...)
	require.NoError(t, err)
	miss := 0
	for i, e := range ex {
		if !e {
			miss++
			if miss < 5 {
				t.Logf("missing %s", its[i])
			}
		}
	}
	info, _ := st.BFInfo(key)
	c, _ := st.hllCache[st.stripe(key)], 0
	_ = c
	t.Logf("DB header: %+v", info)
	if miss > 0 {
		t.Errorf("%d false negatives (cached header)", miss)
	}
	st.ForgetCached(key)
	ex, _ = st.BFMExists(key, its...)
	miss = 0
	for _, e := range ex {
		if !e {
			miss++
		}
	}
	t.Logf("after ForgetCached: %d false negatives", miss)
}
