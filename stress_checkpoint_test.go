package sieve

import (
	"fmt"
)

// stressCheckpoint is a checkpoint the maintainer took under load, with
// the oracle's windows of every key of the families live then (the
// maintainer alone creates and drops families, so the set is fixed while
// it checkpoints).
type stressCheckpoint struct {
	dir    string
	cfs    []int // oracle indexes of the live families
	lo, hi [][]int
}

// takeCheckpoint checkpoints the DB under load.
func (r *stressRun) takeCheckpoint() {
	ck := stressCheckpoint{dir: fmt.Sprintf("ckpt-%d", r.checkpoints.Load())}
	for cf := range r.ncf() {
		if !r.drops.isDropped(cf) {
			ck.cfs = append(ck.cfs, cf)
		}
	}
	for _, cf := range ck.cfs {
		ck.lo = append(ck.lo, r.oracle.windows(cf, false))
	}
	if err := r.db.Checkpoint(ck.dir); err != nil {
		r.violation("Checkpoint: %v", err)
		return
	}
	for _, cf := range ck.cfs {
		ck.hi = append(ck.hi, r.oracle.windows(cf, true))
	}
	r.ckMu.Lock()
	r.pendingCkpts = append(r.pendingCkpts, ck)
	r.ckMu.Unlock()
	r.checkpoints.Add(1)
}

// verifyCheckpoints opens each checkpoint of the round read-only and
// checks every key of every family it should hold against its window at
// the checkpoint, then removes it. REQUIRES: the round's goroutines
// stopped, the oracle not yet trimmed.
func (r *stressRun) verifyCheckpoints() {
	for _, ck := range r.pendingCkpts {
		o := *r.opts
		o.ReadOnly = true
		db, err := Open(ck.dir, &o)
		if err != nil {
			r.violation("opening checkpoint %s: %v (seed %d)", ck.dir, err, r.seed)
			continue
		}
		for i, cf := range ck.cfs {
			r.verifyCheckpointCF(db, ck, i, cf)
		}
		if err := db.Close(); err != nil {
			r.violation("closing checkpoint %s: %v", ck.dir, err)
		}
		if err := removeDir(r.fs, ck.dir); err != nil {
			r.violation("removing checkpoint %s: %v", ck.dir, err)
		}
		r.ckptsVerified.Add(1)
	}
	r.pendingCkpts = nil
}

func (r *stressRun) verifyCheckpointCF(db *DB, ck stressCheckpoint, i, cf int) {
	get := db.Get
	if cf != 0 {
		h, err := db.OpenColumnFamily(r.cfNames[cf], stressCFOptions(r.cfNames[cf]))
		if err != nil {
			r.violation("checkpoint %s: family %s: %v (seed %d)", ck.dir, r.cfNames[cf], err, r.seed)
			return
		}
		get = h.Get
	}
	for k := range r.cfg.keys {
		got, err := toVal(get(stressKeyName(k)))
		if err != nil {
			r.violation("checkpoint %s: Get: %v", ck.dir, err)
			return
		}
		r.checkRead("checkpoint "+ck.dir, cf, k, ck.lo[i][k], ck.hi[i][k], got)
	}
}
