package sieve

import "github.com/sievedb/sieve/compaction"

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
