package sieve

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelCheckpoint is a checkpoint the model test took, with the model as
// of then, verified later (after the source moved on).
type modelCheckpoint struct {
	dir    string
	want   map[string]string
	cfName string // the extra family, if it existed ("" = none)
	cfWant map[string]string
}

// modelCheckpoints counts the model test's checkpoints.
type modelCheckpoints struct {
	pending          []modelCheckpoint
	taken, verified  int
	withCF, readOnly int
}

func (c *modelCheckpoints) requireReached(t *testing.T) {
	t.Helper()
	t.Logf("checkpoints: %d taken, %d verified (%d with the extra family, %d opened read-only)", c.taken, c.verified, c.withCF, c.readOnly)
	require.Positive(t, c.verified)
	require.Positive(t, c.withCF)
	require.Positive(t, c.readOnly)
}

// checkpoint verifies the checkpoints taken so far, then takes one with
// the model as of now.
func (r *modelRun) checkpoint(i int) {
	t, c := r.t, &r.ckpt
	r.verifyCheckpoints()
	ck := modelCheckpoint{dir: fmt.Sprintf("/ckpt-%d", c.taken), want: maps(r.m.cur)}
	if m := &r.cf; m.h != nil {
		ck.cfName, ck.cfWant = m.name, maps(m.cur)
	}
	require.NoError(t, r.db.Checkpoint(ck.dir), "op %d (seed %d)", i, r.seed)
	c.pending = append(c.pending, ck)
	c.taken++
}

// verifyCheckpoints opens each pending checkpoint (read-only or not, at
// random) and compares it with the model as of when it was taken.
func (r *modelRun) verifyCheckpoints() {
	t, c := r.t, &r.ckpt
	for _, ck := range c.pending {
		o := *r.opts
		o.ReadOnly = r.rng.Intn(2) == 0
		db, err := Open(ck.dir, &o)
		require.NoError(t, err, "checkpoint %s (seed %d)", ck.dir, r.seed)
		require.Equal(t, ck.want, scanAll(t, db.NewIter(nil)), "checkpoint %s (seed %d)", ck.dir, r.seed)
		if ck.cfName != "" {
			cf, err := db.OpenColumnFamily(ck.cfName, nil)
			require.NoError(t, err)
			require.Equal(t, ck.cfWant, scanAll(t, cf.NewIter(nil)), "checkpoint %s family %s (seed %d)", ck.dir, ck.cfName, r.seed)
			c.withCF++
		}
		require.NoError(t, db.CheckInvariants(true))
		require.NoError(t, db.Close())
		if o.ReadOnly {
			c.readOnly++
		}
		c.verified++
	}
	c.pending = c.pending[:0]
}
