package sketchcol

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPagedBloomRedisBloomAnswers: a filter's single-page sub-filters
// probe as RedisBloom's, so the answers RedisBloom 2.4.23's flow tests
// expect (tests/flow/test_overall.py, test_debug and test_expansion)
// come out of the Store, false positives included.
func TestPagedBloomRedisBloomAnswers(t *testing.T) {
	st := openTestStore(t, nil, nil).Store
	require.NoError(t, st.BFReserve([]byte("bf"), 0.01, 10, nil))
	for i := range 100 {
		_, err := st.BFAdd([]byte("bf"), fmt.Appendf(nil, "%d", i))
		require.NoError(t, err)
	}
	layers, err := st.BFDebug([]byte("bf"))
	require.NoError(t, err)
	var items []int64
	for _, l := range layers {
		items = append(items, l.Items)
	}
	require.Equal(t, []int64{10, 20, 40, 29}, items, "RedisBloom: size:99 in sub-filters of 10, 20, 40, 29")

	require.NoError(t, st.BFReserve([]byte("exp1"), 0.01, 4, &BFReserveOptions{Expansion: 1}))
	for i := range 100 {
		_, err := st.BFAdd([]byte("exp1"), fmt.Appendf(nil, "%d", i))
		require.NoError(t, err)
	}
	info, err := st.BFInfo([]byte("exp1"))
	require.NoError(t, err)
	require.Equal(t, int64(23), info.Filters, "RedisBloom: 23 sub-filters")
}

// TestPagedBloomV3Probing: a header without the RedisBloom-probing flag
// (format v3, and v4's operands that create a filter without a geometry)
// keeps probing every sub-filter by page, so what v3 wrote is found.
func TestPagedBloomV3Probing(t *testing.T) {
	for _, rb := range []bool{false, true} {
		m, err := NewPagedBloom(BloomSpec{ErrorRate: 0.01, Capacity: 100, Expansion: 2})
		require.NoError(t, err)
		m.h.rb = rb
		var items [][]byte
		for i := range 500 {
			items = append(items, fmt.Appendf(nil, "v%d", i))
			_, err := m.Add(items[i])
			require.NoError(t, err)
		}
		dump, err := m.MarshalBinary()
		require.NoError(t, err)
		st := openTestStore(t, nil, nil).Store
		require.NoError(t, st.Restore([]byte("k"), dump))
		ex, err := st.BFMExists([]byte("k"), items...)
		require.NoError(t, err)
		for i, e := range ex {
			require.True(t, e, "rb=%v: item %q", rb, items[i])
		}
		d, err := st.Dump([]byte("k"))
		require.NoError(t, err)
		require.Equal(t, dump, d, "rb=%v: the flag round-trips", rb)
		// an operand with no geometry creates a v3-probing header
		x, err := (&pagedBloomOp{layers: 1}).create()
		require.NoError(t, err)
		require.False(t, x.(*pagedBloom).rb)
	}
}
