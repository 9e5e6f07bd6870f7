package sieve

import (
	"math/rand/v2"
)

// stressPrefixLen is the stress test's prefix function: "key001" of
// "key0012", ten keys per prefix.
func stressPrefixLen([]byte) int { return 6 }

// prefixRead, one time in three, runs a SeekPrefixGE read of cf (now or
// through a fresh snapshot) and checks it against the oracle: the keys
// come in order, all in [key, end of its prefix), each legal, and every
// key of that range not returned legally absent. It reports whether it
// ran.
func (r *stressRun) prefixRead(cf int, rng *rand.Rand) bool {
	if rng.IntN(3) != 0 {
		return false
	}
	from := r.randomKey(rng)
	to := min(from/10*10+10, r.cfg.keys)
	lo := r.oracle.windows(cf, false)
	var snap *Snapshot
	if rng.IntN(3) == 0 {
		snap = r.db.NewSnapshot()
		defer snap.Close()
	}
	it := r.newIter(cf, nil, snap)
	defer it.Close()
	hi := r.oracle.windows(cf, true)
	got := map[int]string{}
	prev := -1
	for ok := it.SeekPrefixGE(stressKeyName(from)); ok; ok = it.Next() {
		k, valid := stressKeyIndex(it.Key())
		if !valid || k < from || k >= to || k <= prev {
			r.violation("SeekPrefixGE(key%04d): key %q outside [%d, %d) or out of order (seed %d)", from, it.Key(), from, to, r.seed)
			return true
		}
		prev = k
		got[k] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		r.violation("SeekPrefixGE: %v", err)
		return true
	}
	for k := from; k < to; k++ {
		v, present := got[k]
		r.checkRead("SeekPrefixGE", cf, k, lo[k], hi[k], stressVal{present, v})
	}
	r.prefixReads.Add(1)
	return true
}
