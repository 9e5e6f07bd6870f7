package sieve

import (
	"math/rand/v2"
)

// maybeWriteRange runs, one write in 40, a DeleteRange of up to 8
// consecutive keys of a random family (alone, or in a batch with a put of
// the key after it), and reports whether it did. It takes the write locks
// of every key the range covers, in order, as a batch does, so the
// oracle sees one write per covered key.
func (r *stressRun) maybeWriteRange(rng *rand.Rand) bool {
	if rng.IntN(40) != 0 {
		return false
	}
	cf := rng.IntN(r.ncf())
	n := 1 + rng.IntN(8)
	lo := rng.IntN(r.cfg.keys - n)
	ws := make([]stressWrite, n, n+1)
	for i := range ws {
		ws[i] = stressWrite{cf: cf, k: lo + i, kind: 'd'}
	}
	batched := rng.IntN(3) == 0
	if batched {
		ws = append(ws, stressWrite{cf: cf, k: lo + n, kind: 'p', arg: "0"})
	}
	defer r.drops.leave(cf)
	if !r.drops.enter(cf) {
		return true // the family was dropped
	}
	order, unlock := r.lockKeys(ws)
	defer unlock()
	final := map[stressCK]stressVal{}
	for _, w := range ws {
		final[stressCK{w.cf, w.k}] = applyModel(w.cf, stressVal{}, w.kind, w.arg)
	}
	for _, c := range order {
		r.oracle.begin(c.cf, c.k, final[c])
	}
	start, end := stressKeyName(lo), stressKeyName(lo+n)
	wo := NoSync
	if rng.IntN(10) == 0 {
		wo = Sync
	}
	var err error
	h := r.handle(cf)
	switch {
	case batched:
		b := r.db.NewBatch()
		if h == nil {
			err = b.DeleteRange(start, end)
			if err == nil {
				err = b.Put(end, []byte("0"))
			}
		} else if err = b.DeleteRangeCF(h, start, end); err == nil {
			err = b.PutCF(h, end, []byte("0"))
		}
		if err == nil {
			err = r.db.Apply(b, wo)
		}
	case h == nil:
		err = r.db.DeleteRange(start, end, wo)
	default:
		err = h.DeleteRange(start, end, wo)
	}
	if err != nil {
		r.violation("DeleteRange %d [%s, %s): %v", cf, start, end, err)
		return true
	}
	for _, c := range order {
		r.oracle.commit(c.cf, c.k)
	}
	r.rangeDels.Add(1)
	r.ops.Add(1)
	return true
}
