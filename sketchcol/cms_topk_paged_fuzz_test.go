package sketchcol

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// pagedCountersSeeds are valid paged Count-Min and Top-K headers, header
// operands, pages, page operands and dumps.
func pagedCountersSeeds() [][]byte {
	c, _ := NewCMS(CMSSpec{Width: 1030, Depth: 2})
	tk, _ := NewTopK(TopKSpec{K: 3, Width: 600, Depth: 2, Decay: 0.9})
	for i := range 40 {
		c.IncrBy([]byte{byte(i)}, uint64(i))
		tk.Add([]byte{byte(i % 7)}, uint32(i%3))
	}
	spec := TopKSpec{K: 2, Width: 8, Depth: 2, Decay: 0.5}
	return [][]byte{
		(&pagedCMS{spec: c.spec, count: 9}).appendValue(nil),
		appendPagedCMSOp(nil, &pagedCMSOp{spec: c.spec, delta: 3}),
		(&pagedTopK{tk}).appendValue(nil),
		appendPagedTopKOp(nil, &pagedTopKOp{spec: spec, offers: []topKOffer{{count: 3, item: []byte("a")}}}),
		appendCMSPage(nil, []uint32{1, 0, 7}),
		appendCMSPageOp(nil, 3, []cmsAdd{{idx: 0, incr: 2}, {idx: 2, incr: 1 << 32}}),
		append([]byte{kindTopKPage, version1}, make([]byte, 16)...),
		appendTopKPageOp(nil, &topKPageOp{n: 2, row: 1, decay: 0.9, adds: []topKAdd{{idx: 1, h: 5 << 32, incr: 3}, {idx: 1, h: 6 << 32, incr: 2}}}),
		pagedDumpOf(c),
		pagedDumpOf(tk),
	}
}

// appendCountersDump re-encodes a decoded dump.
func appendCountersDump(d *countersDump, dumpKind byte) []byte {
	out := append([]byte{dumpKind, version1}, binary.AppendUvarint(nil, uint64(len(d.raw)))...)
	out = append(out, d.raw...)
	for _, pg := range d.pages {
		out = binary.BigEndian.AppendUint32(out, pg.p)
		out = append(binary.AppendUvarint(out, uint64(len(pg.body))), pg.body...)
	}
	return out
}

// FuzzPagedCountersDecode: the paged Count-Min and Top-K decoders
// (headers, header operands, page operands, dumps) and the page merger on
// any bytes: no panic, errors wrap ErrCorruption, what decodes re-encodes
// to itself, and what merges decodes.
func FuzzPagedCountersDecode(f *testing.F) {
	for _, s := range pagedCountersSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := parsePagedCMS(data); err == nil {
			require.Equal(t, data, h.appendValue(nil), "a valid header re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if o, err := decodePagedCMSOp(data); err == nil {
			require.Equal(t, data, appendPagedCMSOp(nil, o.(*pagedCMSOp)), "a valid operand re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if h, err := parsePagedTopK(data); err == nil {
			_, err := parsePagedTopK(h.appendValue(nil))
			require.NoError(t, err, "a valid header re-encodes to a valid one")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if o, err := decodePagedTopKOp(data); err == nil {
			require.Equal(t, data, appendPagedTopKOp(nil, o.(*pagedTopKOp)), "a valid operand re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if n, adds, err := decodeCMSPageOp(data); err == nil {
			require.Equal(t, data, appendCMSPageOp(nil, n, adds), "a valid page operand re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if o, err := decodeTopKPageOp(data); err == nil {
			require.Equal(t, data, appendTopKPageOp(nil, o), "a valid page operand re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		fuzzCountersDump(t, data)
		fuzzCounterPages(t, data)
	})
}

func fuzzCountersDump(t *testing.T, data []byte) {
	d, err := parseCountersDump(data)
	if err != nil {
		require.ErrorIs(t, err, ErrCorruption)
		return
	}
	require.Equal(t, data, appendCountersDump(d, data[0]), "a valid dump re-encodes to itself")
	k, err := ValidateValue(data)
	require.NoError(t, err)
	require.Equal(t, d.kind, k)
	if _, _, bodyLen, _ := countersGeometry(d.raw); bodyLen != nil {
		if n, _ := bodyLen(0); n > 4096 || len(d.raw) > 4096 {
			return // the Reply functions build the sketch whole: a small one only
		}
	}
	if h, _ := parsePagedCMS(d.raw); h != nil && h.spec.Width*h.spec.Depth > 1<<16 {
		return
	}
	if h, _ := parsePagedTopK(d.raw); h != nil && h.spec.Width*h.spec.Depth > 1<<16 {
		return
	}
	if data[0] == kindPagedCMSDump {
		_, err = CMSQueryReply(data, []byte("x"))
	} else {
		_, err = TopKCountReply(data, []byte("x"))
	}
	require.NoError(t, err)
}

func fuzzCounterPages(t *testing.T, data []byte) {
	var m PageMerger
	for _, hasBase := range []bool{true, false} {
		ops := [][]byte{data}
		base := []byte(nil)
		if hasBase {
			base, ops = data, nil
		}
		if counterPageKind(base, hasBase, ops) == 0 {
			continue
		}
		v, err := m.FullMerge([]byte("k"), base, hasBase, ops)
		if err != nil {
			require.ErrorIs(t, err, ErrCorruption)
			continue
		}
		if v[0] == kindCMSPage {
			_, err = cmsPageBody(v)
		} else {
			_, err = topKPageBody(v)
		}
		require.NoError(t, err)
	}
	if v, ok := m.PartialMerge([]byte("k"), [][]byte{data, data}); ok && counterPageKind(nil, false, [][]byte{data}) != 0 {
		_, err := m.FullMerge([]byte("k"), nil, false, [][]byte{v})
		require.NoError(t, err)
	}
}
