package sketchcol

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeferredBFAdd: a Deferred's BF.ADDs answer as Store.BFAdd would,
// one after the other (an item added earlier in the batch is reported
// present), write nothing before Commit, and leave the Store's cached
// header exact after it; a filter stored whole is refused.
func TestDeferredBFAdd(t *testing.T) {
	s := openTestStore(t, nil, nil)
	ref := openTestStore(t, nil, nil) // the same adds, one Store call each
	require.NoError(t, s.BFReserve(k("bf"), 0.01, 300, nil))
	require.NoError(t, ref.BFReserve(k("bf"), 0.01, 300, nil))
	for round := range 4 {
		d := s.NewDeferred(s.db.NewBatch())
		for i := range 400 {
			for _, key := range []string{"bf", "new"} {
				item := fmt.Appendf(nil, "i%d", (round*400+i)%700)
				got, err := d.BFAdd(k(key), item)
				require.NoError(t, err)
				want, err := ref.BFMAdd(k(key), item)
				require.NoError(t, err)
				require.Equal(t, want, got, "round %d item %d key %s", round, i, key)
			}
		}
		c, err := s.BFCard(k("bf"))
		require.NoError(t, err)
		rc, err := ref.BFCard(k("bf"))
		require.NoError(t, err)
		if round == 0 {
			require.Zero(t, c, "nothing is written before Commit")
		}
		require.NoError(t, d.Commit())
		for _, key := range []string{"bf", "new"} {
			got, err := s.Dump(k(key))
			require.NoError(t, err)
			want, err := ref.Dump(k(key))
			require.NoError(t, err)
			require.Equal(t, want, got, "round %d key %s", round, key)
		}
		c, err = s.BFCard(k("bf"))
		require.NoError(t, err)
		require.Equal(t, rc, c)
	}
	legacy, err := NewScalableBloom(DefaultBloomSpec())
	require.NoError(t, err)
	v, _ := legacy.MarshalBinary()
	require.NoError(t, s.Restore(k("legacy"), v))
	d := s.NewDeferred(s.db.NewBatch())
	_, err = d.BFAdd(k("legacy"), k("x"))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.NoError(t, s.Put(k("str"), []byte{0, 's'}))
	_, err = d.BFAdd(k("str"), k("x"))
	require.ErrorIs(t, err, ErrWrongType)
	require.NoError(t, d.Commit())
}
