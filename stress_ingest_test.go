package sieve

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// maybeIngest, one write in 1000 (and writer 0's first and every
// hundredth), ingests an external table of a random
// family instead: up to 12 distinct keys, as Sets, under the keys' write
// locks like any batch (the oracle records the Sets before the Ingest and
// acknowledges them after it). It reports whether it ran.
func (r *stressRun) maybeIngest(id, n int, rng *rand.Rand) bool {
	if rng.IntN(1000) != 0 && (id != 0 || n%100 != 1) {
		return false
	}
	if r.quietMaint.Load() {
		return false // an ingestion flushes the memtable it overlaps (see quiet)
	}
	cf := rng.IntN(r.ncf())
	picked := map[int]bool{}
	for len(picked) < 1+rng.IntN(12) {
		picked[r.randomKey(rng)] = true
	}
	var ws []stressWrite
	for k := range picked {
		arg := strconv.Itoa(rng.IntN(1000))
		if cf != stressDefault {
			arg = fmt.Sprintf("i%d.%d", id, n)
		}
		ws = append(ws, stressWrite{cf: cf, k: k, kind: 'p', arg: arg})
	}
	defer r.drops.leave(cf)
	if !r.drops.enter(cf) {
		return true // the family was dropped
	}
	order, unlock := r.lockKeys(ws)
	defer unlock()
	args := map[int]string{}
	for _, w := range ws {
		args[w.k] = w.arg
	}
	for _, c := range order {
		r.oracle.begin(c.cf, c.k, stressVal{true, args[c.k]})
	}
	if err := r.ingestKeys(cf, order, args, fmt.Sprintf("ext/%d-%d.sst", id, n)); err != nil {
		r.violation("Ingest into family %s: %v", r.cfNames[cf], err)
		return true
	}
	for _, c := range order {
		r.oracle.commit(c.cf, c.k)
	}
	r.ingests.Add(1)
	return true
}

// ingestKeys writes the external table path of the keys of order (sorted)
// with their args and ingests it into family cf.
func (r *stressRun) ingestKeys(cf int, order []stressCK, args map[int]string, path string) error {
	if err := r.fs.MkdirAll("ext", 0o755); err != nil {
		return err
	}
	w, err := NewExternalTableWriter(path, &Options{FS: r.fs, BlockSize: 512})
	if err != nil {
		return err
	}
	for _, c := range order {
		if err := w.Set(stressKeyName(c.k), []byte(args[c.k])); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if h := r.handle(cf); h != nil {
		return h.Ingest([]string{path})
	}
	return r.db.Ingest([]string{path})
}
