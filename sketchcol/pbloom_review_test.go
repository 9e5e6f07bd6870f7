package sketchcol

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReviewBatchRestoreDump: a paged filter's dump cannot be written as
// one value by a Batch (its pages would be lost); Store.Restore restores
// it whole.
func TestReviewBatchRestoreDump(t *testing.T) {
	ts := openTestStore(t, nil, nil)
	st := ts.Store
	var items [][]byte
	for i := 0; i < 50; i++ {
		items = append(items, []byte{byte(i), 'x'})
	}
	_, err := st.BFMAdd([]byte("src"), items...)
	require.NoError(t, err)
	d, err := st.Dump([]byte("src"))
	require.NoError(t, err)
	b := st.NewBatch()
	require.ErrorIs(t, b.Restore([]byte("dst"), d), ErrInvalidArgument)
	require.NoError(t, st.Restore([]byte("dst"), d))
	ex, err := st.BFMExists([]byte("dst"), items...)
	require.NoError(t, err)
	for i, e := range ex {
		require.True(t, e, "item %d", i)
	}
}

func TestReviewPageMergeAssoc(t *testing.T) {
	pm := PageMerger{}
	base := append([]byte{kindBloomPage, version1}, make([]byte, 8)...)
	base[2] = 1 << 5 // bit 5 in a 64-bit page
	a := appendPageOp(nil, 128, []uint32{1})
	b := appendPageOp(nil, 64, []uint32{2})
	seq, err := pm.FullMerge([]byte("k"), base, true, [][]byte{a, b})
	require.NoError(t, err)
	_, ok := pm.PartialMerge([]byte("k"), [][]byte{a, b})
	require.False(t, ok, "operands of two page sizes do not fold: only the value, in order, decides")
	p, ok := pm.PartialMerge([]byte("k"), [][]byte{b, b})
	require.True(t, ok)
	par, err := pm.FullMerge([]byte("k"), base, true, [][]byte{a, p})
	require.NoError(t, err)
	if !bytes.Equal(seq, par) {
		t.Errorf("FullMerge(base,[a,b]) %x != FullMerge(base,[a,PartialMerge(b,b)]) %x", seq, par)
	}
}

func TestReviewBatchBFAddStalePages(t *testing.T) {
	ts := openTestStore(t, nil, nil)
	st := ts.Store
	_, err := st.BFAdd([]byte("k"), []byte("old"))
	require.NoError(t, err)
	// The key is deleted by a batch of the caller's own (no DropPages).
	sb := ts.db.NewBatch()
	require.NoError(t, sb.DeleteCF(st.ColumnFamily(), []byte("k")))
	require.NoError(t, ts.db.Apply(sb, nil))
	b := st.NewBatch()
	require.NoError(t, b.BFAdd([]byte("k"), []byte("new")))
	require.NoError(t, b.Commit(nil))
	ok, err := st.BFExists([]byte("k"), []byte("old"))
	require.NoError(t, err)
	t.Logf("old item after re-creation via Batch.BFAdd: %v", ok)
	// Same through the Store's own create:
	sb = ts.db.NewBatch()
	require.NoError(t, sb.DeleteCF(st.ColumnFamily(), []byte("k2")))
	_, err = st.BFAdd([]byte("k2"), []byte("old"))
	require.NoError(t, err)
	sb = ts.db.NewBatch()
	require.NoError(t, sb.DeleteCF(st.ColumnFamily(), []byte("k2")))
	require.NoError(t, ts.db.Apply(sb, nil))
	st.ForgetCached([]byte("k2"))
	_, err = st.BFAdd([]byte("k2"), []byte("new"))
	require.NoError(t, err)
	ok2, err := st.BFExists([]byte("k2"), []byte("old"))
	require.NoError(t, err)
	t.Logf("old item after re-creation via Store.BFAdd: %v", ok2)
}
