package sketchcol

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// TestBFScanDumpLoadChunk: a scaled filter dumped in chunks and loaded
// into another key (over a filter of another geometry) gives the same
// Dump and answers; a filter stored whole moves in one chunk; bad chunks
// write nothing.
func TestBFScanDumpLoadChunk(t *testing.T) {
	s := openTestStore(t, nil, nil)
	require.NoError(t, s.BFReserve(k("src"), 0.01, 20000, nil))
	items := make([][]byte, 0, 50000)
	for i := range 50000 {
		items = append(items, fmt.Appendf(nil, "i%d", i))
	}
	_, err := s.BFMAdd(k("src"), items...)
	require.NoError(t, err)
	_, err = s.BFMAdd(k("dst"), k("old")) // a default filter the load replaces
	require.NoError(t, err)

	type chunk struct {
		iter int64
		data []byte
	}
	var chunks []chunk
	for iter := int64(0); ; {
		next, data, err := s.BFScanDump(k("src"), iter)
		require.NoError(t, err)
		if next == 0 {
			break
		}
		chunks = append(chunks, chunk{next, data})
		iter = next
	}
	info, err := s.BFInfo(k("src"))
	require.NoError(t, err)
	require.Greater(t, info.Filters, int64(1))
	require.Greater(t, len(chunks), 2, "a header chunk and several page chunks")
	for _, c := range chunks {
		require.NoError(t, s.BFLoadChunk(k("dst"), c.iter, c.data))
	}
	want, err := s.Dump(k("src"))
	require.NoError(t, err)
	got, err := s.Dump(k("dst"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	in, err := s.BFMExists(k("dst"), append(items[:3:3], k("old"))...)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true, false}, in)

	// Bad input: nothing written.
	require.ErrorIs(t, s.BFLoadChunk(k("dst"), 1, []byte("junk")), ErrCorruption)
	require.ErrorIs(t, s.BFLoadChunk(k("dst"), 2, []byte("junk")), ErrCorruption)
	require.ErrorIs(t, s.BFLoadChunk(k("dst"), 0, nil), ErrInvalidArgument)
	got, err = s.Dump(k("dst"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, _, err = s.BFScanDump(k("missing"), 0)
	require.Error(t, err)

	// A filter stored whole: one chunk.
	legacy, err := NewScalableBloom(DefaultBloomSpec())
	require.NoError(t, err)
	_, _ = legacy.Add(k("x"))
	v, _ := legacy.MarshalBinary()
	require.NoError(t, s.Restore(k("legacy"), v))
	next, data, err := s.BFScanDump(k("legacy"), 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), next)
	require.NoError(t, s.BFLoadChunk(k("legacy2"), next, data))
	next, _, err = s.BFScanDump(k("legacy"), next)
	require.NoError(t, err)
	require.Zero(t, next)
	ok, err := s.BFExists(k("legacy2"), k("x"))
	require.NoError(t, err)
	require.True(t, ok)
}

// TestScanDumpByGetEqualsIter: the two ways of scanning a filter's pages
// give the same chunks, also over the deleted pages of an earlier, larger
// filter of the same key.
func TestScanDumpByGetEqualsIter(t *testing.T) {
	ts := openTestStore(t, &sieve.Options{MemTableSize: 256 << 10}, nil)
	st := ts.Store
	key := []byte("bf")
	require.NoError(t, st.BFReserve(key, 0.01, 5_000_000, nil))
	for i := range 3000 {
		_, err := st.BFAdd(key, fmt.Appendf(nil, "old%d", i))
		require.NoError(t, err)
	}
	require.NoError(t, st.Delete(key))
	require.NoError(t, st.BFReserve(key, 0.01, 500_000, nil))
	for i := range 2000 {
		_, err := st.BFAdd(key, fmt.Appendf(nil, "new%d", i))
		require.NoError(t, err)
	}
	scan := func(threshold int64) [][]byte {
		defer func(old int64) { scanByGetPages = old }(scanByGetPages)
		scanByGetPages = threshold
		var chunks [][]byte
		for it := int64(0); ; {
			next, chunk, err := st.BFScanDump(key, it)
			require.NoError(t, err)
			if next == 0 {
				return chunks
			}
			chunks, it = append(chunks, chunk), next
		}
	}
	byGet, byIter := scan(1<<40), scan(0)
	require.Greater(t, len(byGet), 2, "several chunks of pages")
	require.Equal(t, byIter, byGet)
}
