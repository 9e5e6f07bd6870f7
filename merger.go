package sieve

import (
	"fmt"

	"github.com/sievedb/sieve/compaction"
)

// Merger resolves merge operands of a column family.
//
// The algebra it must satisfy: merging is associative — for operands a, b,
// c (oldest first), FullMerge(base, [a, b, c]) must equal
// FullMerge(base, [PartialMerge([a, b]), c]) and FullMerge(base, [a,
// PartialMerge([b, c])]) whenever those partial merges return ok. sieve
// applies PartialMerge to any run of adjacent operands not split by a
// snapshot, in compaction and in the memtable, in any grouping. Order is
// preserved: operands are always passed oldest first, so a merger whose
// operation is not commutative (string append) is correct; one that is also
// commutative and idempotent (max, set union) may be merged more freely by
// its own code.
//
// A Merger must be safe for concurrent use and deterministic: the same
// inputs always give the same output.
//
// It is compaction.Merger: one definition, re-exported here.
type Merger = compaction.Merger

// fullMerge resolves operands (oldest first) with column family cf's merger.
func (db *DB) fullMerge(cf uint32, key, baseVal []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	st := db.cfs.get(cf)
	if st == nil || st.merger == nil {
		name := ""
		if st != nil {
			name = st.recordedMerger
		}
		return nil, fmt.Errorf("%w: key %q has merge operands; merger %q not supplied", ErrNoMerger, key, name)
	}
	if !hasBase {
		baseVal = nil
	}
	v, err := st.merger.FullMerge(key, baseVal, hasBase, operands)
	if err != nil {
		return nil, fmt.Errorf("sieve: merger %q failed on key %q: %w", st.merger.Name(), key, err)
	}
	return v, nil
}
