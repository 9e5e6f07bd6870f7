package sketchcol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeferredPFAddMarked: the mark of PFAddMarked is false on a key the
// Store has no cached registers of, set by a PFAdd that changed
// registers (in the batch and after Commit), kept by PFAdds that change
// nothing, and lost on ForgetCached, on any other write to the key, and
// on a write to another key of its stripe.
func TestDeferredPFAddMarked(t *testing.T) {
	s := openTestStore(t, nil, nil)
	d := s.NewDeferred(s.db.NewBatch())
	add := func(key string, elems ...string) (changed, marked bool) {
		t.Helper()
		var es [][]byte
		for _, e := range elems {
			es = append(es, []byte(e))
		}
		changed, _, marked, err := d.PFAddMarked([]byte(key), es...)
		require.NoError(t, err)
		return changed, marked
	}
	commit := func() { t.Helper(); require.NoError(t, d.Commit()) }

	ch, mk := add("h", "a")
	require.True(t, ch)
	require.False(t, mk, "a new key is not marked")
	ch, mk = add("h", "a")
	require.False(t, ch)
	require.True(t, mk, "marked in the batch")
	commit()
	ch, mk = add("h", "b")
	require.True(t, ch)
	require.True(t, mk, "marked after Commit")
	commit()

	s.ForgetCached([]byte("h"))
	_, mk = add("h", "c")
	require.False(t, mk, "ForgetCached drops the mark")
	commit()

	require.NoError(t, s.PFAddBlind([]byte("h"), []byte("d")))
	_, mk = add("h", "e")
	require.False(t, mk, "a blind write drops the mark")
	commit()

	// Another key of h's stripe.
	var other []byte
	for i := 0; other == nil; i++ {
		if k := []byte{'k', byte(i), byte(i >> 8)}; s.stripe(k) == s.stripe([]byte("h")) && string(k) != "h" {
			other = k
		}
	}
	require.NoError(t, s.Put(other, nil))
	ch, mk = add("h", "a")
	require.False(t, ch)
	require.False(t, mk, "a write to the stripe drops the mark")
	ch, mk = add("h", "a")
	require.False(t, ch)
	require.False(t, mk, "a PFAdd that changes nothing sets no mark")
	commit()
}
