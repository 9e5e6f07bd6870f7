package sketchcol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoreWithBatch runs commands through a view: they see each other's
// writes, the DB sees none of them until the batch is applied, and then
// the Store (its cache included) sees all of them.
func TestStoreWithBatch(t *testing.T) {
	ts := openTestStore(t, nil, nil)
	st := ts.Store
	_, err := st.PFAdd([]byte("h"), []byte("a")) // cached before the view
	require.NoError(t, err)
	_, err = st.BFAdd([]byte("bf"), []byte("x"))
	require.NoError(t, err)

	b := ts.db.NewIndexedBatch()
	v := st.WithBatch(b)
	changed, err := v.PFAdd([]byte("h"), []byte("b"), []byte("c"))
	require.NoError(t, err)
	require.True(t, changed)
	n, err := v.PFCount([]byte("h"))
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	added, err := v.BFAdd([]byte("bf"), []byte("y"))
	require.NoError(t, err)
	require.True(t, added)
	added, err = v.BFAdd([]byte("bf"), []byte("y"))
	require.NoError(t, err)
	require.False(t, added, "the view reads its own write")
	require.NoError(t, v.CMSInitByDim([]byte("cms"), 100, 4))
	_, err = v.CMSIncrBy([]byte("cms"), [][]byte{[]byte("i")}, []int64{5})
	require.NoError(t, err)
	require.ErrorIs(t, v.Apply(b, nil), errViewApply)

	n, err = st.PFCount([]byte("h"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the DB saw the view's writes before Apply")
	ok, err := st.BFExists([]byte("bf"), []byte("y"))
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, st.Apply(b, nil))
	n, err = st.PFCount([]byte("h"))
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	changed, err = st.PFAdd([]byte("h"), []byte("b")) // from the cache: must be stale
	require.NoError(t, err)
	require.False(t, changed)
	added, err = st.BFAdd([]byte("bf"), []byte("y"))
	require.NoError(t, err)
	require.False(t, added)
	q, err := st.CMSQuery([]byte("cms"), []byte("i"))
	require.NoError(t, err)
	require.EqualValues(t, []int64{5}, q)
}
