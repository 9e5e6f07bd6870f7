package sketchcol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBloomSpecValidate(t *testing.T) {
	ok := DefaultBloomSpec()
	for _, tc := range []struct {
		name string
		edit func(*BloomSpec)
		good bool
	}{
		{"defaults", func(*BloomSpec) {}, true},
		{"error rate 0", func(s *BloomSpec) { s.ErrorRate = 0 }, false},
		{"error rate 1", func(s *BloomSpec) { s.ErrorRate = 1 }, false},
		{"error rate negative", func(s *BloomSpec) { s.ErrorRate = -0.1 }, false},
		{"error rate NaN", func(s *BloomSpec) { s.ErrorRate = math.NaN() }, false},
		{"error rate tiny", func(s *BloomSpec) { s.ErrorRate = 1e-9 }, true},
		{"capacity 0", func(s *BloomSpec) { s.Capacity = 0 }, false},
		{"capacity -1", func(s *BloomSpec) { s.Capacity = -1 }, false},
		{"capacity 1", func(s *BloomSpec) { s.Capacity = 1 }, true},
		{"capacity too large for a value", func(s *BloomSpec) { s.Capacity = 1 << 40 }, false},
		{"expansion 0 while scaling", func(s *BloomSpec) { s.Expansion = 0 }, false},
		{"expansion 32768", func(s *BloomSpec) { s.Expansion = 32768 }, true},
		{"expansion 32769", func(s *BloomSpec) { s.Expansion = 32769 }, false},
		{"non-scaling", func(s *BloomSpec) { s.NonScaling, s.Expansion = true, 0 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			err := s.Validate()
			if tc.good {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrInvalidArgument)
				_, err = BFReserveOp(s)
				require.ErrorIs(t, err, ErrInvalidArgument)
			}
		})
	}
}

func items(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s:%d", prefix, i)
	}
	return out
}

// TestBloomScaling: RedisBloom semantics of a scaled filter — no false
// negatives, sub-filters growing by the expansion at half the error rate,
// and an overall false-positive rate below twice the one requested after
// scaling to 5× the capacity.
func TestBloomScaling(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		capacity  int64
		expansion int
		layers    int64
	}{
		{0.01, 1000, 2, 3}, // 1000 + 2000 + 4000 ≥ 5000
		{0.01, 1000, 1, 5}, // five of 1000
		{0.001, 500, 4, 2}, // 500 + 2000 (a few false positives keep it under)
		{0.05, 2000, 2, 3},
	} {
		t.Run(fmt.Sprintf("p=%v,cap=%d,exp=%d", tc.rate, tc.capacity, tc.expansion), func(t *testing.T) {
			b, err := NewScalableBloom(BloomSpec{ErrorRate: tc.rate, Capacity: tc.capacity, Expansion: tc.expansion})
			require.NoError(t, err)
			in := items("in", int(5*tc.capacity))
			added := 0
			for _, it := range in {
				ok, err := b.Add(it)
				require.NoError(t, err)
				if ok {
					added++
				}
			}
			for _, it := range in {
				require.True(t, b.Exists(it), "false negative for %s", it)
			}
			info := b.Info()
			require.Equal(t, tc.layers, info.Filters)
			require.Equal(t, int64(added), info.ItemsInserted)
			require.Equal(t, int64(added), b.Card())
			require.Equal(t, int64(tc.expansion), info.ExpansionRate)
			wantCap, rate := int64(0), tc.rate
			for i := range b.layers {
				c := tc.capacity * int64(math.Pow(float64(tc.expansion), float64(i)))
				wantCap += c
				require.Equal(t, uint64(c), b.layers[i].Capacity(), "sub-filter %d", i)
				require.Equal(t, rate, b.layers[i].ErrorRate(), "sub-filter %d", i)
				rate /= 2
			}
			require.Equal(t, wantCap, info.Capacity)
			enc, err := b.MarshalBinary()
			require.NoError(t, err)
			require.Equal(t, int64(len(enc)), info.Size, "Info.Size is the encoded size")

			fp := 0
			const probes = 200000
			for _, it := range items("out", probes) {
				if b.Exists(it) {
					fp++
				}
			}
			fpr := float64(fp) / probes
			t.Logf("%d items in %d sub-filters: measured FPR %.4f%%, expected %.4f%%, requested %.2f%%",
				len(in), info.Filters, 100*fpr, 100*b.ExpectedFPR(), 100*tc.rate)
			require.Less(t, fpr, 2*tc.rate)
		})
	}
}

func TestBloomAddSemantics(t *testing.T) {
	b, err := NewScalableBloom(DefaultBloomSpec())
	require.NoError(t, err)
	ok, err := b.Add([]byte("x"))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.Add([]byte("x"))
	require.NoError(t, err)
	require.False(t, ok, "BF.ADD of a present item is 0 and inserts nothing")
	require.Equal(t, int64(1), b.Card())

	// BF.ADD on a missing key creates a filter with the defaults.
	replies, err := BFAddReply(nil, nil, []byte("a"), []byte("b"), []byte("a"))
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false}, replies)
	var m Merger
	op, err := BFAddOp(nil, []byte("a"), []byte("b"), []byte("a"))
	require.NoError(t, err)
	v, err := m.FullMerge(nil, nil, false, [][]byte{op})
	require.NoError(t, err)
	info, err := BFInfoReply(v)
	require.NoError(t, err)
	require.Equal(t, BFInfo{Capacity: 100, Size: int64(len(v)), Filters: 1, ItemsInserted: 2, ExpansionRate: 2}, info)
	card, err := BFCardReply(v)
	require.NoError(t, err)
	require.Equal(t, int64(2), card)
	ex, err := BFExistsReply(v, []byte("a"), []byte("b"), []byte("zzz-absent"))
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false}, ex)
	ex, err = BFExistsReply(nil, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, []bool{false}, ex)
	card, err = BFCardReply(nil)
	require.NoError(t, err)
	require.Zero(t, card)

	// BF.RESERVE then add: the reserved geometry.
	res, err := BFReserveOp(BloomSpec{ErrorRate: 0.001, Capacity: 5000, Expansion: 4})
	require.NoError(t, err)
	v, err = m.FullMerge(nil, nil, false, [][]byte{res, op})
	require.NoError(t, err)
	info, err = BFInfoReply(v)
	require.NoError(t, err)
	require.Equal(t, int64(5000), info.Capacity)
	require.Equal(t, int64(4), info.ExpansionRate)
}

func TestBloomNonScaling(t *testing.T) {
	spec := BloomSpec{ErrorRate: 0.01, Capacity: 50, NonScaling: true}
	b, err := NewScalableBloom(spec)
	require.NoError(t, err)
	var i int
	for i = 0; b.Card() < 50; i++ {
		_, err := b.Add(fmt.Appendf(nil, "n%d", i))
		require.NoError(t, err)
	}
	before, _ := b.MarshalBinary()
	var full []byte
	for ; ; i++ {
		it := fmt.Appendf(nil, "n%d", i)
		if b.Exists(it) {
			continue // a possibly-present item is a 0 reply, not an error
		}
		_, err := b.Add(it)
		require.ErrorIs(t, err, ErrFilterFull)
		full = it
		break
	}
	after, _ := b.MarshalBinary()
	require.Equal(t, before, after, "a failed add changes nothing")
	require.Equal(t, int64(0), b.Info().ExpansionRate)

	// The reply helper stops at the full item; the blind operand overfills.
	replies, err := BFAddReply(before, nil, []byte("n0"), full)
	require.ErrorIs(t, err, ErrFilterFull)
	require.Equal(t, []bool{false}, replies)
	var m Merger
	op, err := BFAddOp(nil, full)
	require.NoError(t, err)
	v, err := m.FullMerge(nil, before, true, [][]byte{op})
	require.NoError(t, err)
	ex, err := BFExistsReply(v, full)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, ex, "a blind add is never lost")
	card, err := BFCardReply(v)
	require.NoError(t, err)
	require.Equal(t, int64(51), card)
}

func TestBloomMaxLayers(t *testing.T) {
	b, err := NewScalableBloom(BloomSpec{ErrorRate: 0.5, Capacity: 1, Expansion: 1})
	require.NoError(t, err)
	var err2 error
	for i := 0; err2 == nil && i < 10000; i++ {
		_, err2 = b.Add(fmt.Appendf(nil, "l%d", i))
	}
	require.ErrorIs(t, err2, ErrFilterFull)
	require.Equal(t, int64(maxBloomLayers), b.Info().Filters)
	enc, _ := b.MarshalBinary()
	_, err = ParseBloom(enc)
	require.NoError(t, err)
}

func TestBloomDecode(t *testing.T) {
	b, err := NewScalableBloom(BloomSpec{ErrorRate: 0.01, Capacity: 10, Expansion: 2})
	require.NoError(t, err)
	for _, it := range items("d", 25) {
		_, err := b.Add(it)
		require.NoError(t, err)
	}
	good, err := b.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, 2, int(good[3]), "two sub-filters")
	p, err := ParseBloom(good)
	require.NoError(t, err)
	again, _ := p.MarshalBinary()
	require.Equal(t, good, again)
	k, err := ValidateValue(good)
	require.NoError(t, err)
	require.Equal(t, KindBloom, k)

	le := binary.LittleEndian
	firstLen := int(le.Uint64(good[bloomHeaderLen:]))
	layer0 := bloomHeaderLen + 8 // the filter package's encoding of sub-filter 0
	edit := func(f func(v []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"empty", nil},
		{"kind", edit(func(v []byte) []byte { v[0] = kindCuckooValue; return v })},
		{"version 2", edit(func(v []byte) []byte { v[1] = 2; return v })},
		{"unknown flag", edit(func(v []byte) []byte { v[2] = 2; return v })},
		{"header cut", good[:bloomHeaderLen-1]},
		{"no sub-filters", edit(func(v []byte) []byte { v[3] = 0; return v })},
		{"65 sub-filters", edit(func(v []byte) []byte { v[3] = 65; return v })},
		{"more sub-filters than bytes", edit(func(v []byte) []byte { v[3] = 3; return v })},
		{"non-scaling with two", edit(func(v []byte) []byte { v[2] = bloomFlagNonScaling; v[4], v[5] = 0, 0; return v })},
		{"scaling with expansion 0", edit(func(v []byte) []byte { v[4], v[5] = 0, 0; return v })},
		{"expansion 3 mismatches sub-filter 1", edit(func(v []byte) []byte { v[4] = 3; return v })},
		{"error rate 0", edit(func(v []byte) []byte { le.PutUint64(v[6:], 0); return v })},
		{"error rate NaN", edit(func(v []byte) []byte { le.PutUint64(v[6:], math.Float64bits(math.NaN())); return v })},
		{"error rate mismatches sub-filter 0", edit(func(v []byte) []byte { le.PutUint64(v[6:], math.Float64bits(0.02)); return v })},
		{"capacity 0", edit(func(v []byte) []byte { le.PutUint64(v[14:], 0); return v })},
		{"capacity mismatches", edit(func(v []byte) []byte { le.PutUint64(v[14:], 11); return v })},
		{"sub-filter length past the end", edit(func(v []byte) []byte { le.PutUint64(v[bloomHeaderLen:], 1<<40); return v })},
		{"sub-filter length short", edit(func(v []byte) []byte { le.PutUint64(v[bloomHeaderLen:], uint64(firstLen-8)); return v })},
		{"sub-filter not a filter value", edit(func(v []byte) []byte { v[layer0] = 99; return v })},
		{"older sub-filter below capacity", edit(func(v []byte) []byte { le.PutUint64(v[layer0+26:], 3); return v })},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"cut in the last sub-filter", good[:len(good)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBloom(tc.value)
			require.ErrorIs(t, err, ErrCorruption)
		})
	}
}
