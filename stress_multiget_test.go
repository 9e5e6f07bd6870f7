package sieve

import (
	"math/rand/v2"
)

// readMultiGet checks a MultiGet of up to 16 random keys of cf (some
// repeated) against the oracle, each key within its own window; half the
// time it reads through a fresh snapshot and checks that every answer is
// also what Get through that snapshot returns (one consistent view). It
// returns false after a violation that ends the reader.
func (r *stressRun) readMultiGet(cf int, rng *rand.Rand) bool {
	defer r.drops.leave(cf)
	if !r.drops.enter(cf) {
		return true
	}
	ks := make([]int, 1+rng.IntN(16))
	keys := make([][]byte, len(ks))
	for i := range ks {
		ks[i] = r.randomKey(rng)
		keys[i] = stressKeyName(ks[i])
	}
	lo := r.oracle.windows(cf, false)
	var snap *Snapshot
	if rng.IntN(2) == 0 {
		snap = r.db.NewSnapshot()
		defer snap.Close()
	}
	h := r.handle(cf)
	var vals [][]byte
	var errs []error
	switch {
	case snap != nil && h != nil:
		vals, errs = snap.MultiGetCF(h, keys)
	case snap != nil:
		vals, errs = snap.MultiGet(keys)
	case h != nil:
		vals, errs = h.MultiGet(keys)
	default:
		vals, errs = r.db.MultiGet(keys)
	}
	hi := r.oracle.windows(cf, true)
	r.multiGets.Add(1)
	for i, k := range ks {
		got, err := toVal(vals[i], errs[i])
		if err != nil {
			r.violation("MultiGet: %v", err)
			return false
		}
		r.checkRead("MultiGet", cf, k, lo[k], hi[k], got)
		if snap == nil {
			continue
		}
		again, err := toVal(r.snapGet(snap, cf, keys[i]))
		if err != nil || again != got {
			r.violation("MultiGet through a snapshot: family %s key%04d = %v, Get through it %v (%v) (seed %d)",
				r.cfNames[cf], k, got, again, err, r.seed)
			return false
		}
	}
	return true
}
