package sketchcol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// pagedSeeds are valid header, operand, page and dump bytes.
func pagedSeeds(t testing.TB) [][]byte {
	m, err := NewPagedBloom(BloomSpec{ErrorRate: 0.01, Capacity: 50, Expansion: 2})
	require.NoError(t, err)
	for i := range 120 {
		_, _ = m.add([]byte{byte(i), 'x'}, false)
	}
	spec := DefaultBloomSpec()
	return [][]byte{
		m.h.appendValue(nil),
		m.appendValue(nil),
		appendPagedBloomOp(nil, &pagedBloomOp{spec: &spec, layers: 2, deltas: []int64{3, 4}}),
		appendPagedBloomOp(nil, &pagedBloomOp{layers: 1, deltas: []int64{1}}),
		appendPageOp(nil, 64, []uint32{1, 5, 63}),
		append([]byte{kindBloomPage, version1}, make([]byte, 8)...),
		append([]byte{kindBloomPageOp, version1, pageFormBits}, make([]byte, 16)...),
	}
}

// FuzzPagedBloomDecode: the paged filter's decoders (header, header
// operand, dump) and the page merger on any bytes: no panic, errors wrap
// ErrCorruption, a valid header or dump re-encodes to itself.
func FuzzPagedBloomDecode(f *testing.F) {
	for _, s := range pagedSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := parsePagedBloom(data); err == nil {
			require.Equal(t, data, h.appendValue(nil), "a valid header re-encodes to itself")
			_ = h.info()
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if o, err := decodePagedBloomOp(data); err == nil {
			require.Equal(t, data, appendPagedBloomOp(nil, o.(*pagedBloomOp)), "a valid operand re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if d, err := parsePagedDump(data); err == nil {
			m := memPagedOf(d)
			require.Equal(t, data, m.appendValue(nil), "a valid dump re-encodes to itself")
			d.exists([][]byte{[]byte("x")})
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if v, err := (PageMerger{}).FullMerge([]byte("k"), data, true, nil); err == nil {
			if v[0] == kindBloomPage { // other pages' kinds: their own fuzz targets
				_, err := pageBitsOf(v)
				require.NoError(t, err)
			}
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if v, ok := (PageMerger{}).PartialMerge([]byte("k"), [][]byte{data, data}); ok {
			_, err := (PageMerger{}).FullMerge([]byte("k"), nil, false, [][]byte{v})
			require.NoError(t, err)
		}
	})
}
