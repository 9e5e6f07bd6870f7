package cuckoo

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestAltIsAnInvolution(t *testing.T) {
	for lb := uint8(0); lb <= 20; lb++ {
		tb := New(lb, 1)
		for fp := 1; fp <= 255; fp++ {
			for _, i := range []uint64{0, 1, tb.Buckets() - 1, tb.Buckets() / 2} {
				i &= tb.Buckets() - 1
				require.Equal(t, i, tb.alt(tb.alt(i, byte(fp)), byte(fp)))
			}
		}
	}
}

func TestFingerprintRange(t *testing.T) {
	for _, h := range []uint64{0, 1 << 32, 254 << 32, 255 << 32, ^uint64(0)} {
		fp := Fingerprint(h)
		require.NotZero(t, fp)
	}
}

// TestInsertKickUndo: a failed insertion leaves the table byte for byte
// as it was; a successful one loses no fingerprint; both are
// deterministic in the seed.
func TestInsertKickUndo(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 2))
	for _, bs := range []int{1, 2, 4} {
		tb := New(4, bs)
		var placed int
		for range 1000 {
			h := rng.Uint64()
			fp := Fingerprint(h)
			i1, i2 := tb.Buckets1And2(h, fp)
			if tb.InsertFree(i1, i2, fp) {
				placed++
				continue
			}
			before := bytes.Clone(tb.Slots())
			twin := FromSlots(4, bs, bytes.Clone(before))
			ok := tb.InsertKick(i1, i2, fp, 30, h)
			require.Equal(t, ok, twin.InsertKick(i1, i2, fp, 30, h), "same seed, same outcome")
			require.Equal(t, twin.Slots(), tb.Slots(), "same seed, same bytes")
			if ok {
				placed++
				require.Equal(t, uint64(placed), tb.Occupied())
				require.True(t, tb.Has(i1, i2, fp))
			} else {
				require.Equal(t, before, tb.Slots(), "a failed insertion is undone")
			}
		}
		require.Equal(t, uint64(placed), tb.Occupied())
		require.Greater(t, placed, 16*bs/2, "bucket size %d fills past half", bs)
	}
}
