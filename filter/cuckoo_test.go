package filter

import (
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestAltBucketIsInvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 2))
	for range iterations(100_000) {
		n := 1 + rng.Uint32N(1<<20)
		if rng.IntN(4) == 0 {
			n = 1 + rng.Uint32N(8)
		}
		i := rng.Uint32N(n)
		fp := 1 + rng.Uint64N(1<<16-1)
		j := altBucket(i, fp, n)
		require.Less(t, j, n)
		require.Equal(t, i, altBucket(j, fp, n), "n=%d i=%d fp=%d", n, i, fp)
	}
}

func TestBucketHas(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 3))
	for f := minFingerprintBits; f <= maxFingerprintBits; f++ {
		l := newCuckooLayout(f)
		for range iterations(20_000) {
			var w uint64
			var slots [4]uint64
			for j := range uint(4) {
				if rng.IntN(4) != 0 {
					slots[j] = rng.Uint64N(l.fpMax + 1)
				}
				w = l.setSlot(w, j, slots[j])
			}
			// Garbage above the bucket (a neighbour's bytes) must not matter.
			w |= ^l.mask & rng.Uint64()
			fp := 1 + rng.Uint64N(l.fpMax)
			if rng.IntN(2) == 0 {
				fp = slots[rng.IntN(4)]
			}
			want := slots[0] == fp || slots[1] == fp || slots[2] == fp || slots[3] == fp
			require.Equal(t, want, l.has(w&l.mask, fp), "f=%d slots=%v fp=%d", f, slots, fp)
			require.Equal(t, want, l.has(w, fp), "f=%d: bits above the bucket", f)
		}
	}
}

func TestFingerprintRange(t *testing.T) {
	for f := minFingerprintBits; f <= maxFingerprintBits; f++ {
		l := newCuckooLayout(f)
		require.Equal(t, uint64(1), l.fingerprint(0))
		require.Equal(t, l.fpMax, l.fingerprint(0xFFFFFFFF))
	}
}

// TestCuckooRebuildKeepsEveryKey starts the build with far too few buckets,
// so that it must fail and grow many times, and checks that no key was lost.
func TestCuckooRebuildKeepsEveryKey(t *testing.T) {
	ks := randomKeys(31, iterations(5000))
	hs := make([]uint64, ks.len())
	for i := range hs {
		hs[i] = hashKey(ks.at(i))
	}
	data := buildCuckoo(hashListOf(hs), 8, 1)
	r, err := Cuckoo(8).NewReader(data)
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)
	info, err := Inspect(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, uint64(info.Buckets)*bucketSlots, info.Entries)
	t.Log(info)
}

func TestCuckooBuildFailsWhenFull(t *testing.T) {
	ks := randomKeys(32, 1000)
	hs := make([]uint64, ks.len())
	for i := range hs {
		hs[i] = hashKey(ks.at(i))
	}
	l := newCuckooLayout(12)
	_, _, ok := tryBuildCuckoo(hashListOf(hs), &l, 200) // 800 slots for 1000 keys
	require.False(t, ok)
}

// TestCuckooDuplicateKeys adds each key many times, not in a row: a table
// build stores each fingerprint once instead of failing.
func TestCuckooDuplicateKeys(t *testing.T) {
	ks := randomKeys(33, 100)
	b := Cuckoo(12).NewBuilder()
	for range 50 {
		for i := range ks.len() {
			b.Add(ks.at(i))
		}
	}
	data := b.Finish()
	r, err := OpenBlock(data)
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)
	info, err := Inspect(data)
	require.NoError(t, err)
	require.Equal(t, uint64(100), info.Entries)
	require.Equal(t, uint64(5000), info.Keys)
}

func TestCuckooBlockSize(t *testing.T) {
	for _, f := range []int{4, 7, 8, 12, 13, 16} {
		for _, n := range []int{0, 1, 3, 4, 1000, 54321} {
			data := build(Cuckoo(f), randomKeys(uint64(n+f), n))
			info, err := Inspect(data)
			require.NoError(t, err)
			buckets := 0
			if n > 0 {
				buckets = int((float64(n) + 3.8 - 1e-9) / 3.8)
			}
			require.GreaterOrEqual(t, int(info.Buckets), buckets, "f=%d n=%d", f, n)
			require.Equal(t, int(info.Buckets)*((4*f+7)/8)+cuckooTrailerLen, len(data))
		}
	}
}
