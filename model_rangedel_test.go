package sieve

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelRangeDels counts what TestRandomizedModel's range deletions did,
// over all reopens, so that the test fails if a case went unreached.
type modelRangeDels struct {
	calls, batched, keysRemoved             int64
	written, keysDropped, tombstonesDropped int64
	tablesDropped                           int64
}

func (c *modelRangeDels) add(m *Metrics) {
	c.written += m.RangeDel.Written
	c.keysDropped += m.RangeDel.KeysDropped
	c.tombstonesDropped += m.RangeDel.TombstonesDropped
	c.tablesDropped += m.RangeDel.TablesDropped
}

func (c *modelRangeDels) require(t *testing.T) {
	t.Logf("range deletions: %d calls (%d in batches), %d model keys removed; %d written, compaction dropped %d entries, %d tombstones and %d whole tables",
		c.calls, c.batched, c.keysRemoved, c.written, c.keysDropped, c.tombstonesDropped, c.tablesDropped)
	require.Positive(t, c.calls)
	require.Positive(t, c.batched)
	require.Positive(t, c.keysRemoved)
	require.Positive(t, c.written)
	require.Positive(t, c.keysDropped, "no entry was dropped by a range tombstone")
	require.Positive(t, c.tombstonesDropped, "no range tombstone was dropped")
}

// deleteRange deletes a random range of up to 40 keys (sometimes empty)
// from the database and the model; a quarter of them in a batch that puts
// a key before the deletion and the range's start after it.
func (r *modelRun) deleteRange(i int) {
	t, m := r.t, r.m
	lo := r.key()
	var n int
	fmt.Sscanf(lo, "key%d", &n)
	hi := fmt.Sprintf("key%04d", n+r.rng.Intn(40))
	r.rd.calls++
	batched := r.rng.Intn(4) == 0
	var b *Batch
	if batched {
		r.rd.batched++
		b = r.db.NewBatch()
		k := r.key()
		require.NoError(t, b.Put([]byte(k), []byte("before")))
		m.cur[k] = "before"
		require.NoError(t, b.DeleteRange([]byte(lo), []byte(hi)))
	} else {
		require.NoError(t, r.db.DeleteRange([]byte(lo), []byte(hi), nil))
	}
	for k := range m.cur {
		if k >= lo && k < hi {
			delete(m.cur, k)
			r.rd.keysRemoved++
		}
	}
	if batched {
		v := fmt.Sprintf("after%d", i)
		require.NoError(t, b.Put([]byte(lo), []byte(v)))
		m.cur[lo] = v
		require.NoError(t, r.db.Apply(b, nil))
	}
}
