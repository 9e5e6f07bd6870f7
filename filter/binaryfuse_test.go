package filter

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBinaryFuseFPR holds the binary fuse filter to its math: an absent key
// passes with probability 2^-f, and the size is about 1.125·f bits/key on
// a million keys (issue 16: BinaryFuse(8) ≤ 9.1 bits/key at ≤ 0.40%).
func TestBinaryFuseFPR(t *testing.T) {
	n := figureKeys(t)
	for _, f := range []int{8, 16} {
		theory := math.Exp2(-float64(f))
		for _, sc := range schemes(n) {
			got := measure(t, BinaryFuse(f), sc)
			tol := max(0.10*theory, 4*sigma(theory, n))
			require.InDelta(t, theory, got.fpr, tol, "%d-bit fuse: FPR within 10%% (or 4σ) of 2^-f", f)
			if n >= 1_000_000 {
				require.LessOrEqual(t, got.bitsPerKey, 1.14*float64(f), "about 1.125·f bits/key on 1M keys")
				if f == 8 {
					require.LessOrEqual(t, got.bitsPerKey, 9.1, "issue 16: BinaryFuse(8) ≤ 9.1 bits/key")
					require.LessOrEqual(t, got.fpr, 0.0040, "issue 16: BinaryFuse(8) ≤ 0.40%%")
				}
			}
		}
	}
}

// TestBinaryFuseSizes builds tables of every small size and some larger
// ones (segment-length boundaries) and checks each for false negatives.
func TestBinaryFuseSizes(t *testing.T) {
	for _, f := range []int{8, 16} {
		p := BinaryFuse(f)
		for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 100, 999, 1000, 4096, 20_000, 65_537} {
			ks := randomKeys(uint64(n)+uint64(f), n)
			data := build(p, ks)
			r, err := p.NewReader(data)
			require.NoError(t, err, "n=%d", n)
			requireNoFalseNegatives(t, r, ks)
			info, err := Inspect(data)
			require.NoError(t, err)
			require.Equal(t, FormatBinaryFuse, info.Format)
			require.Equal(t, uint64(n), info.Keys)
			if n == 0 {
				require.False(t, r.MayContain([]byte("x")))
			}
		}
	}
}

func TestBinaryFuseDuplicates(t *testing.T) {
	b := BinaryFuse(8).NewBuilder()
	for i := range 3000 {
		b.Add([]byte{byte(i % 7), byte(i % 11)}) // 77 distinct keys, repeated non-adjacently
	}
	r, err := OpenBlock(b.Finish())
	require.NoError(t, err)
	for i := range 77 {
		require.True(t, r.MayContain([]byte{byte(i % 7), byte(i % 11)}))
	}
}

// TestBinaryFuseRetryAndFallback forces construction failures: one failure
// is a retry with another salt; failing every attempt builds a blocked
// Bloom block, which the policy's reader refuses as another format (a
// table's reader then opens it by its code) and OpenBlock reads.
func TestBinaryFuseRetryAndFallback(t *testing.T) {
	defer func() { testFuseFailures = 0 }()
	ks := randomKeys(5, 5000)
	p := BinaryFuse(8)

	testFuseFailures = 1
	b := p.NewBuilder()
	for i := range ks.len() {
		b.Add(ks.at(i))
	}
	data := b.Finish()
	require.Equal(t, BuildReport{Retries: 1}, b.(BuildReporter).LastBuild())
	require.Equal(t, FormatBinaryFuse, blockFormat(data))
	require.NotZero(t, binary.LittleEndian.Uint64(data[len(data)-fuseTrailerLen+8:]), "salt of attempt 1")
	r, err := p.NewReader(data)
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)

	testFuseFailures = fuseAttempts
	for i := range ks.len() {
		b.Add(ks.at(i))
	}
	data = b.Finish()
	require.Equal(t, BuildReport{Retries: fuseAttempts - 1, FellBack: true}, b.(BuildReporter).LastBuild())
	require.Equal(t, FormatBlockedBloom, blockFormat(data))
	_, err = p.NewReader(data)
	require.True(t, errors.Is(err, ErrTypeMismatch), "%v", err)
	r, err = OpenBlock(data)
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)
}

// TestBinaryFuseRefusesBadGeometry alters each trailer field of a valid
// block and checks the decoder refuses it as malformed.
func TestBinaryFuseRefusesBadGeometry(t *testing.T) {
	good := build(BinaryFuse(8), randomKeys(9, 1000))
	_, err := OpenBlock(good)
	require.NoError(t, err)
	tr := len(good) - fuseTrailerLen
	le := binary.LittleEndian
	cases := map[string]func(d []byte){
		"segment length not a power of two": func(d []byte) { le.PutUint32(d[tr+24:], le.Uint32(d[tr+24:])+1) },
		"segment length zero":               func(d []byte) { le.PutUint32(d[tr+24:], 0) },
		"segment length doubled":            func(d []byte) { le.PutUint32(d[tr+24:], 2*le.Uint32(d[tr+24:])) },
		"one segment more":                  func(d []byte) { le.PutUint32(d[tr+28:], le.Uint32(d[tr+28:])+1) },
		"no segments":                       func(d []byte) { le.PutUint32(d[tr+28:], 0) },
		"16-bit fingerprints":               func(d []byte) { d[tr+32] = 16 },
		"12-bit fingerprints":               func(d []byte) { d[tr+32] = 12 },
		"version 2":                         func(d []byte) { d[tr+33] = 2 },
		"more keys than slots":              func(d []byte) { le.PutUint64(d[tr:], 1<<40) },
		"no keys":                           func(d []byte) { le.PutUint64(d[tr:], 0) },
	}
	for name, mutate := range cases {
		d := append([]byte(nil), good...)
		mutate(d)
		_, err := OpenBlock(d)
		require.True(t, errors.Is(err, ErrMalformed), "%s: %v", name, err)
	}
	_, err = OpenBlock(good[1:])
	require.True(t, errors.Is(err, ErrMalformed), "truncated: %v", err)
}
