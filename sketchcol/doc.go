// Package sketchcol is sieve's sketch column family: probabilistic values
// — HyperLogLog (byte-compatible with Redis), scalable Bloom filters,
// cuckoo filters, Count-Min sketches and Top-K sketches (with RedisBloom's
// semantics) — written as merge operands and collapsed by compaction, so
// that counting distinct visitors, guarding a cache or counting page views
// never needs a read-modify-write.
//
// Use it through a Store: Open(db) opens the column family "sketch" with
// the Merger and runs the commands, named as go-redis names them —
// PFAdd/PFCount/PFMerge, BFReserve/BFAdd/BFMAdd/BFInsert/BFExists/...,
// CFReserve/CFAdd/CFAddNX/CFDel/CFCount/..., CMSInitByDim/CMSIncrBy/
// CMSQuery/CMSMerge/..., TopKReserve/TopKAdd/TopKList/..., Dump and
// Restore:
//
//	st, err := sketchcol.Open(db)
//	added, err := st.BFAdd([]byte("crawled"), []byte(url))
//	err = st.PFAddBlind([]byte("visitors:2024-06-01"), []byte(userID))
//	n, err := st.PFCount([]byte("visitors:2024-06-01"))
//
// Underneath, per command, a Reply function computes Redis's answer from
// the current value and an Op function builds the operand to write: a
// command whose answer needs the value reads, calls the Reply, then
// merges the Op; its blind variant (PFAddBlind, BFAddBlind, CFAddBlind,
// CMSIncrByBlind, TopKAddBlind, a Batch) merges the Op alone and never
// reads. Both are exported for
// callers that batch or route commands themselves.
//
// FORMAT.md specifies every byte of every value and operand.
//
// # Where things are
//
// Each sketch's files are named <sketch>_<layer>.go, so one sketch's files
// sort together and the suffix says the layer. From the bottom up:
//
//	layer                  HyperLogLog      Bloom              cuckoo
//	value type             hll.go           bloom.go           cuckoo.go
//	                       hll_estimate.go
//	value bytes            hll_codec.go     bloom_codec.go     cuckoo_codec.go
//	operand and fold       hll_merge.go     bloom_merge.go     cuckoo_merge.go
//	per-command Reply/Op   hll_command.go   bloom_command.go   cuckoo_command.go
//	Store command          hll_store.go     bloom_store.go     cuckoo_store.go
//
//	layer                  Count-Min        Top-K
//	value type             cms.go           topk.go
//	value bytes            cms_codec.go     topk_codec.go
//	operand and fold       cms_merge.go     topk_merge.go
//	per-command Reply/Op   cms_command.go   topk_command.go
//	Store command          cms_store.go     topk_store.go
//
// The rows:
//
//   - value type: the decoded sketch and its Redis semantics — HLL
//     (hll_estimate.go holds its cardinality estimator), ScalableBloom
//     with BloomSpec and BFInfo, CuckooFilter with CuckooSpec and CFInfo,
//     CountMinSketch with CMSSpec and CMSInfo, TopK with TopKSpec and
//     TopKInfo.
//   - value bytes: ParseHLL and HLL.Bytes, ParseBloom and
//     ScalableBloom.MarshalBinary, ParseCuckoo and
//     CuckooFilter.MarshalBinary, ParseCMS, ParseTopK and their
//     MarshalBinary.
//   - operand and fold: the decoded operand (hllOp, bloomOp, cuckooOp,
//     cmsOp, topKOp), its encoding and decoding, how it applies to a
//     value, and the fold PartialMerge uses (foldHLLOps, ..., foldTopKOps).
//   - per-command Reply/Op: the exported functions over bytes described
//     above — PFAddReply, PFAddOp, PFMergeOp, PFCountValues, RefreshHLL;
//     BFAddReply, BFAddOp, BFReserveOp, BFExistsReply, ...; CFAddReply,
//     CFAddOp, CFDelOp, CFReserveOp, CFCountReply, ...; CMSIncrByOp,
//     CMSIncrByReply, CMSMergeOp, ...; TopKIncrByOp, TopKIncrByReply, ...
//   - Store command: the Store's methods PF*, BF*, CF*, CMS* and TopK*,
//     with the options they take (BFReserveOptions, BFInsertOptions,
//     CFReserveOptions).
//
// What they all share: kind.go (the kind byte every value and operand
// starts with: KindOf, expectKind), operand.go (the set operand of Restore,
// and the decoding of any value or operand into its sketch's type),
// merger.go (Merger), store.go (Store, Open, Dump, Restore, the per-key
// locks), store_batch.go (Batch), store_deferred.go (Deferred),
// hll_cache.go (PFAdd's cache of decoded registers), errors.go and
// redis_errors.go (the CMS and Top-K errors, with RedisBloom's texts), and
// murmur.go (the hash HLL positions come from). A Bloom value stacks the filter package's
// BloomFilter; a cuckoo value stacks internal/cuckoo's Table.
//
// Tests follow the same names: hll_test.go, bloom_test.go and
// cuckoo_test.go test a sketch's value, its bytes and its Reply functions;
// hll_store_test.go, bloom_store_test.go and cuckoo_store_test.go run the
// Store's commands as tables (on the harness of store_test.go).
// merger_test.go and fuzz_test.go test the operands and the merge of the
// first three sketches, and the other store_*_test.go test the Store as a
// whole. Count-Min and Top-K: cms_test.go, topk_test.go (value, accuracy),
// cms_store_test.go, topk_store_test.go (command tables), cms_fuzz_test.go
// (their fuzz targets) and cms_topk_model_test.go (merge algebra and
// compaction equivalence).
//
// # Choosing a sketch
//
//   - HyperLogLog counts distinct elements in 12 KB (0.81% standard
//     error); it cannot say whether an element was seen.
//   - A Bloom filter answers "possibly present" or "certainly not"; it
//     cannot delete. A scalable one grows by stacking sub-filters.
//   - A cuckoo filter answers the same and can delete, but only items
//     that were added: deleting a false positive removes another item.
//   - A Count-Min sketch counts occurrences per item: an estimate is never
//     below the true count and, with width ⌈2/ε⌉ and depth ⌈log₂ 1/δ⌉,
//     above it by more than ε·N with probability at most δ. Its counters
//     add, so blind increments merge exactly.
//   - A Top-K sketch keeps the k heaviest items of a stream (HeavyKeeper);
//     it may miss some when width is small for k.
//
// None of them may decide permissions or billing: a false positive is a
// legal answer.
//
// # Concurrency
//
// A Store is safe for concurrent use: commands that read before they
// write hold a per-key lock, so their replies are those of a serial order
// (Store's doc says what blind writes do meanwhile). A Batch is not safe
// for concurrent use. Package-level functions and Merger are pure and
// safe for concurrent use. HLL, ScalableBloom, CuckooFilter,
// CountMinSketch and TopK values are not safe for concurrent mutation.
//
// # Cost of a command
//
// A key's value is read whole: a Get merges the key's operands not yet
// compacted (decoding the value, applying them, encoding it again) and
// the command decodes the result. So a reply-bearing command, or an
// EXISTS, costs about the size of the value — a 12 KB dense HLL, a Bloom
// filter of 1.2 bytes per item at 1% — while a blind add costs the size
// of its operand. Probe many items with BFMExists or CFMExists (one read).
// A PFCount of a compacted key is one read answered from the HLL's
// cached cardinality. PFAdd is the exception: it answers from a bounded
// cache of the registers of hot keys (hll_cache.go), so a hot key's PFAdd
// costs its elements' hashes and the operand; Deferred
// (store_deferred.go) adds PFAdds' operands to one batch.
//
// # The merge algebra
//
// A key's state is either missing (⊥) or one value. Every operand denotes
// a function from states to states, and
//
//	FullMerge(base, o1 … on) = encode(on(… o1(base)))
//	PartialMerge(oi … oj)    = an operand denoting oj ∘ … ∘ oi
//
// so, function composition being associative, every grouping the engine
// may choose — partial merges of any adjacent runs, nested, in memtables
// and compactions, and full merges onto a base at any point — yields the
// same bytes as applying the commands one at a time. Encodings are
// canonical (an HLL value is a function of its registers, FORMAT.md), so
// "the same state" means "the same bytes". TestMergeAlgebra checks this
// property on random histories mixing all operand kinds.
//
// The operands and how they fold:
//
//   - HLL operand R, a set of (register, rank) pairs: v ↦ max(v, R)
//     register-wise (⊥ as the empty sketch). Max is associative,
//     commutative and idempotent: HLL operands fold by register-wise max
//     in any order. PFADD writes the pairs of its elements, PFMERGE the
//     union of its sources (the destination being a source of its own
//     max).
//   - Bloom operand (geometry, h1 … hk): on ⊥ create a filter of the
//     geometry, then BF.ADD each item hash in order. Folding keeps the
//     first operand's geometry (after it the key exists, so later ones
//     find it) and concatenates the hashes, dropping any repeat of an
//     earlier one (a repeated add finds its item present: a no-op). The
//     fold is associative and idempotent but deliberately not commutative:
//     a bitwise OR of filters is order-free only for one sub-filter of
//     fixed geometry, while RedisBloom's count and the sub-filter an item
//     lands in depend on the order of adds (an item that is a false
//     positive is not counted; an add past capacity opens a sub-filter).
//     Once a fold meets the value itself (a base or a set operand) the
//     hashes collapse into its bits.
//   - Cuckoo operand (geometry, records): add, addnx and delete records
//     applied in order; they do not commute (add-then-delete is not
//     delete-then-add), so cuckoo operands fold by concatenation.
//   - Count-Min operand (geometry, (hash, increment)…): on ⊥ create a
//     sketch of the geometry, then add the increments. Counters are
//     saturating sums of non-negative numbers, which commute and
//     associate: operands fold by summing the increments of equal hashes
//     (first operand's geometry), and the fold is exact — a blind
//     CMS.INCRBY costs its operand and collapses in compaction.
//   - Top-K operand (geometry, (increment, item)…): HeavyKeeper's adds
//     depend on the order (decay, the heap), so Top-K operands fold by
//     concatenation. RedisBloom decays with libc rand(); sieve draws from
//     splitmix64 seeded by the item's hash, the row and the bucket's state
//     (FORMAT.md, "Top-K value"), so an add is a function of the value and
//     the item, and every grouping gives the bytes of one add at a time.
//   - Set operand V (Restore, CMS.MERGE): the constant function V. o ∘ Set(V) =
//     Set(o(V)) and Set(V) ∘ o = Set(V): everything before the newest set
//     operand of a group is dead.
//
// # Wrong types
//
// A key's kind changes only through a set operand. An operand of another
// kind than the key's current value denotes the identity (it is dropped,
// as Redis refuses a WRONGTYPE command and leaves the value alone); the
// Store's reading commands return ErrWrongType instead. Whether an operand
// is of the wrong kind depends on the base, so PartialMerge declines to
// fold operands of different kinds unless a set operand among them fixes
// the kind.
//
// # Corruption
//
// A malformed base or operand makes FullMerge fail for its own key with an
// error wrapping ErrCorruption; PartialMerge declines such a group, so the
// bad operand stays where it is and fails only reads of that key.
//
// # Blind writes that cannot succeed
//
// An operand merged later cannot fail its writer. A Bloom add into a full
// non-scaling filter overfills the newest sub-filter (more false
// positives, never a false negative). A cuckoo add with no room left is
// dropped and counted in CFInfo.ItemsDropped. A cuckoo delete that reaches
// a missing key (deleted between CF.DEL's read and its write) leaves an
// empty filter of the default geometry. The Reply functions report these
// cases as ErrFilterFull before anything is written. A blind CMS.INCRBY or
// TOPK.ADD reaching a missing key creates it with the default geometry
// (DefaultCMSSpec, DefaultTopKSpec), where RedisBloom's commands would
// fail; the replied forms fail as RedisBloom's do.
package sketchcol
