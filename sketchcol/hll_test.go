package sketchcol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// hllPositionGolden: (element, register, rank) under MurmurHash64A with
// Redis's seed, covering every tail length 0..7 and bytes ≥ 0x80 (which
// must not be sign-extended). TestHLLRedisPositions checks the same
// table against redis-server.
var hllPositionGolden = []struct {
	elem  string
	index int
	rank  uint8
}{
	{"", 5938, 2},
	{"a", 12711, 2},
	{"ab", 719, 1},
	{"abc", 9474, 1},
	{"abcd", 11070, 8},
	{"abcde", 3726, 4},
	{"abcdef", 13647, 2},
	{"abcdefg", 5634, 2},
	{"abcdefgh", 1383, 1},
	{"abcdefghi", 6903, 1},
	{"hello world", 9399, 4},
	{"0123456789abcdef", 5949, 1},
	{"0123456789abcdefg", 14057, 2},
	{"\x00", 8840, 2},
	{"\xff\xfe\xfd\xfc\xfb\xfa\xf9", 13604, 1},
	{"\x80\x81\x82\x83\x84\x85\x86\x87\x88", 14534, 6},
}

func TestHLLPosition(t *testing.T) {
	for _, g := range hllPositionGolden {
		i, r := hllPosition([]byte(g.elem))
		require.Equal(t, g.index, i, "register of %q", g.elem)
		require.Equal(t, g.rank, r, "rank of %q", g.elem)
	}
}

// hllValue builds a value from a header and a body.
func hllValue(enc byte, body ...byte) []byte {
	return append([]byte{'H', 'Y', 'L', 'L', enc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80}, body...)
}

func repeat(n int, b ...byte) []byte { return bytes.Repeat(b, n) }

func TestHLLDecodeMalformed(t *testing.T) {
	dense := hllValue(hllEncDense, make([]byte, hllDenseLen-hllHeaderLen)...)
	dense52 := bytes.Clone(dense)
	dense52[hllHeaderLen] = 52 // register 0 = 52
	denseLast := bytes.Clone(dense)
	denseLast[hllDenseLen-1] = 52 << 2 // register 16383 = 52
	cases := []struct {
		name  string
		value []byte
	}{
		{"empty", []byte{}},
		{"short header", []byte("HYLL\x01")},
		{"magic", append([]byte("HYLX"), hllValue(hllEncSparse, 0x7f, 0xff)[4:]...)},
		{"unused byte", func() []byte { v := hllValue(hllEncSparse, 0x7f, 0xff); v[6] = 1; return v }()},
		{"encoding 2 (Redis's internal raw)", hllValue(2, 0x7f, 0xff)},
		{"encoding 255", hllValue(255, 0x7f, 0xff)},
		{"dense one byte short", dense[:hllDenseLen-1]},
		{"dense one byte long", append(bytes.Clone(dense), 0)},
		{"dense register 0 above 51", dense52},
		{"dense register 16383 above 51", denseLast},
		{"sparse without opcodes", hllValue(hllEncSparse)},
		{"sparse XZERO cut off", hllValue(hllEncSparse, 0x7f)},
		{"sparse short of 16384", hllValue(hllEncSparse, 0x7f, 0xfe)},
		{"sparse one past 16384", hllValue(hllEncSparse, 0x7f, 0xff, 0x00)},
		{"sparse VAL run past the end (CVE-2019-10192 shape)", hllValue(hllEncSparse, 0x7f, 0xfd, 0x83)},
		{"sparse XZEROs summing past 16384 (CVE-2025-32023 shape)", hllValue(hllEncSparse, repeat(40000, 0x7f, 0xff)...)},
		{"sparse ZEROs summing past 16384", hllValue(hllEncSparse, repeat(300, 0x3f)...)},
		{"sparse trailing VAL", hllValue(hllEncSparse, 0x7f, 0xff, 0x80)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHLL(tc.value)
			require.ErrorIs(t, err, ErrCorruption)
			_, err = hllHistogram(tc.value)
			require.ErrorIs(t, err, ErrCorruption)
			_, err = PFCountValues(tc.value)
			require.Error(t, err)
			_, err = ValidateValue(tc.value)
			require.Error(t, err)
		})
	}
}

func TestHLLDecodeValid(t *testing.T) {
	cases := []struct {
		name  string
		value []byte
		regs  map[int]uint8
	}{
		{"empty sparse", hllValue(hllEncSparse, 0x7f, 0xff), nil},
		{"empty dense", hllValue(hllEncDense, make([]byte, hllDenseLen-hllHeaderLen)...), nil},
		// Non-canonical but valid: Redis itself may write any of these.
		{"zeros split in ZEROs", hllValue(hllEncSparse, append(repeat(255, 0x3f), 0x3e, 0x80)...), map[int]uint8{16383: 1}},
		{"short zero run as XZERO", hllValue(hllEncSparse, 0x40, 0x00, 0x84, 0x7f, 0xfd), map[int]uint8{1: 2}},
		{"VAL runs of one value", hllValue(hllEncSparse, 0x80, 0x83, 0x7f, 0xfa), map[int]uint8{0: 1, 1: 1, 2: 1, 3: 1, 4: 1}},
		{"VAL of 32", hllValue(hllEncSparse, 0xfc, 0x7f, 0xfe), map[int]uint8{0: 32}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHLL(tc.value)
			require.NoError(t, err)
			for i := range hllRegisters {
				require.Equal(t, tc.regs[i], h.Register(i), "register %d", i)
			}
			k, err := ValidateValue(tc.value)
			require.NoError(t, err)
			require.Equal(t, KindHLL, k)
		})
	}
}

// TestHLLCanonical: the encoding is a function of the registers — the
// rules of FORMAT.md, "Canonical encoding".
func TestHLLCanonical(t *testing.T) {
	body := func(h *HLL) string { return fmt.Sprintf("% x", h.Bytes()[hllHeaderLen:]) }
	h := NewHLL()
	require.Equal(t, "7f ff", body(h))
	h.set(0, 1)
	require.Equal(t, "80 7f fe", body(h))
	h.set(16383, 3)
	require.Equal(t, "80 7f fd 88", body(h))
	for i := 1; i <= 6; i++ {
		h.set(i, 1)
	}
	require.Equal(t, "83 82 7f f7 88", body(h), "a run of 7 is VAL×4 then VAL×3")
	h.set(100, 32)
	require.Equal(t, "83 82 40 5c fc 7f 99 88", body(h))
	h.set(100, 33)
	require.Len(t, h.Bytes(), hllDenseLen, "a register above 32 makes it dense")
	require.Equal(t, byte(hllEncDense), h.Bytes()[4])
}

// TestHLLSparseLimit: sparse up to 3000 bytes in all, dense beyond.
func TestHLLSparseLimit(t *testing.T) {
	h := NewHLL()
	// Registers 0, 2, 4, ... at 1: each costs a VAL and a ZERO (2 bytes).
	for i := 0; ; i += 2 {
		h.set(i, 1)
		b := h.Bytes()
		// body: pairs VAL ZERO(1), then the final XZERO.
		sparseLen := hllHeaderLen + 2*(i/2+1) - 1 + 2
		if sparseLen <= hllSparseMaxBytes {
			require.Equal(t, byte(hllEncSparse), b[4], "at %d registers", i/2+1)
			require.Len(t, b, sparseLen)
		} else {
			require.Equal(t, byte(hllEncDense), b[4], "at %d registers", i/2+1)
			break
		}
	}
}

func TestHLLRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 1))
	for trial := range 300 {
		h := NewHLL()
		n := rng.IntN(hllRegisters)
		if trial%3 == 0 {
			n = rng.IntN(1500)
		}
		for range n {
			r := uint8(1 + rng.IntN(4))
			if rng.IntN(50) == 0 {
				r = uint8(1 + rng.IntN(hllMaxRank))
			}
			h.set(rng.IntN(hllRegisters), r)
		}
		b := h.Bytes()
		p, err := ParseHLL(b)
		require.NoError(t, err)
		require.True(t, p.Equal(h))
		require.Equal(t, h.Count(), p.Count())
		require.Equal(t, b, p.Bytes())
		var histo hllHisto
		for _, r := range h.reg {
			histo[r]++
		}
		got, err := hllHistogram(b)
		require.NoError(t, err)
		require.Equal(t, histo, got)
	}
}

func TestHLLCountCache(t *testing.T) {
	h := NewHLL()
	for i := range 1000 {
		h.Add(fmt.Appendf(nil, "c%d", i))
	}
	fresh := h.Bytes()
	n := h.Count()
	require.InDelta(t, 1000, n, 30)

	// A valid cache is trusted, as Redis trusts it.
	forged := bytes.Clone(fresh)
	binary.LittleEndian.PutUint64(forged[8:], 12345)
	got, err := PFCountValues(forged)
	require.NoError(t, err)
	require.Equal(t, int64(12345), got)

	// A stale cache is recomputed, and RefreshHLL writes it back.
	stale := bytes.Clone(fresh)
	stale[15] |= hllCardInvalid
	got, err = PFCountValues(stale)
	require.NoError(t, err)
	require.Equal(t, n, got)
	got, refreshed, err := RefreshHLL(stale)
	require.NoError(t, err)
	require.Equal(t, n, got)
	require.Equal(t, fresh, refreshed)
	_, refreshed, err = RefreshHLL(fresh)
	require.NoError(t, err)
	require.Nil(t, refreshed, "nothing to write back for a valid cache")

	// Several values: the union, missing keys as empty.
	other := NewHLL()
	for i := 500; i < 1500; i++ {
		other.Add(fmt.Appendf(nil, "c%d", i))
	}
	union := h.Clone()
	union.Merge(other)
	got, err = PFCountValues(fresh, nil, other.Bytes())
	require.NoError(t, err)
	require.Equal(t, union.Count(), got)
	got, err = PFCountValues(nil, nil)
	require.NoError(t, err)
	require.Zero(t, got)
}

func TestHLLAddReply(t *testing.T) {
	changed, err := PFAddReply(nil)
	require.NoError(t, err)
	require.True(t, changed, "PFADD on a missing key creates it")
	h := NewHLL()
	h.Add([]byte("a"))
	v := h.Bytes()
	for _, tc := range []struct {
		elems []string
		want  bool
	}{
		{nil, false},
		{[]string{"a"}, false},
		{[]string{"a", "b"}, true},
	} {
		elems := make([][]byte, len(tc.elems))
		for i, e := range tc.elems {
			elems[i] = []byte(e)
		}
		got, err := PFAddReply(v, elems...)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%v", tc.elems)
	}
}

func TestHLLEstimatorEdges(t *testing.T) {
	require.Zero(t, hllTau(0))
	require.Zero(t, hllTau(1))
	require.Zero(t, hllSigma(0))
	require.Equal(t, int64(0), NewHLL().Count())
	var all51 hllHisto
	all51[hllMaxRank] = hllRegisters
	require.Positive(t, all51.estimate(), "every register saturated")
	h := NewHLL()
	require.True(t, h.Add([]byte("x")))
	require.False(t, h.Add([]byte("x")))
	require.Equal(t, int64(1), h.Count())
}

// workedExample is FORMAT.md's worked example: PFADD k hello world sieve.
var workedExample = struct {
	elems   [][]byte
	value   string // after PFCOUNT
	operand string
}{
	elems:   [][]byte{[]byte("hello"), []byte("world"), []byte("sieve")},
	value:   "48 59 4c 4c 01 00 00 00 03 00 00 00 00 00 00 00 4a b5 88 53 72 84 45 d4 80 5b fe",
	operand: "10 01 00 03 b6 ca 00 2a 9e 00 00 64 00",
}

func TestHLLWorkedExample(t *testing.T) {
	h := NewHLL()
	for _, e := range workedExample.elems {
		h.Add(e)
	}
	require.Equal(t, workedExample.value, fmt.Sprintf("% x", h.Bytes()))
	require.Equal(t, workedExample.operand, fmt.Sprintf("% x", PFAddOp(workedExample.elems...)))
	var m Merger
	v, err := m.FullMerge(nil, nil, false, [][]byte{PFAddOp(workedExample.elems...)})
	require.NoError(t, err)
	require.Equal(t, workedExample.value, fmt.Sprintf("% x", v))
}
