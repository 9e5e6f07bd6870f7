// Package sketchcol keeps probabilistic sketches in a column family of a
// sieve database and runs Redis's and RedisBloom's commands on them:
// HyperLogLogs (PFADD, PFCOUNT, PFMERGE, in Redis's own bytes), scalable
// Bloom filters (BF.*), cuckoo filters (CF.*), Count-Min sketches (CMS.*)
// and Top-K sketches (TOPK.*). Every write is a merge operand that
// compaction folds into the key's value, so adding to a sketch needs no
// read-modify-write: counting distinct visitors, remembering the URLs a
// crawler has seen or counting page views costs one small write each.
//
// # Values
//
// A key holds one sketch, of one Kind:
//
//   - KindHLL, a HyperLogLog: how many distinct elements were added, in at
//     most 12 KB, with a standard error of 0.81%. It cannot say whether an
//     element was seen. Its value is Redis's encoding, byte for byte, so a
//     value taken from redis-server with GET can be restored here, and a
//     Dump of it SET there.
//   - KindBloom, a scalable Bloom filter (RedisBloom's BF.*): "possibly
//     present" or "certainly not". It cannot delete. Past its capacity it
//     grows by stacking a sub-filter Expansion times larger at a tighter
//     error rate (BloomSpec), so its rate stays bounded however far it
//     scales. A filter is kept as a small header at its key and pages of
//     at most 4 KiB of bits in a family of their own
//     (PagesColumnFamilyName), so a command reads and writes only the
//     pages its items touch; filters stored whole by earlier versions keep
//     working as they are.
//   - KindCuckoo, a cuckoo filter (CF.*): the same answers, and it can
//     delete, but only items that were added: deleting a false positive
//     removes another item (CuckooSpec).
//   - KindCMS, a Count-Min sketch (CMS.*): an estimated count per item,
//     never below the true count and, with width ⌈2/ε⌉ and depth
//     ⌈log₂ 1/δ⌉, above it by more than ε·N with probability at most δ
//     (CMSSpec).
//   - KindTopK, a Top-K sketch (TOPK.*, HeavyKeeper): the k heaviest items
//     of a stream; it may miss some when the width is small for k
//     (TopKSpec).
//
// None of them may decide permissions or billing: a false positive is a
// legal answer. doc/sketches.md in the repository compares the commands
// with Redis's and RedisBloom's and gives accuracy figures, each with the
// command that measures it.
//
// # The Store
//
// Open(db) opens the sketch column family (ColumnFamilyName, "sketch") and
// the family of the Bloom filters' pages (PagesColumnFamilyName) with the
// package's merge operators, creating them if they do not exist, and
// returns a Store; OpenWithOptions takes StoreOptions (Sync: every write
// durable before the command returns). Always open the families this way:
// their merge operands can only be read with Merger and PageMerger, whose
// names the database records (MergerName, PageMergerName).
//
// The Store's methods are the commands, named as go-redis names them, and
// answer what Redis would:
//
//	st, err := sketchcol.Open(db)
//	if err != nil { ... }
//	changed, err := st.PFAdd([]byte("visitors"), []byte(userID)) // PFADD
//	n, err := st.PFCount([]byte("visitors"))                     // PFCOUNT
//	err = st.BFReserve([]byte("crawled"), 0.001, 1_000_000, nil)  // BF.RESERVE
//	added, err := st.BFAdd([]byte("crawled"), []byte(url))        // BF.ADD: true when new
//
// The commands by sketch:
//
//   - HyperLogLog: PFAdd, PFCount (of one key, or of the union of several),
//     PFMerge.
//   - Bloom: BFReserve, BFAdd, BFMAdd, BFInsert, BFExists, BFMExists,
//     BFCard, BFInfo.
//   - Cuckoo: CFReserve, CFAdd, CFAddNX, CFDel, CFExists, CFMExists,
//     CFCount, CFInfo.
//   - Count-Min: CMSInitByDim, CMSInitByProb, CMSIncrBy, CMSQuery,
//     CMSMerge, CMSInfo.
//   - Top-K: TopKReserve, TopKAdd, TopKIncrBy, TopKQuery, TopKList,
//     TopKListWithCount, TopKInfo.
//   - Any key: Dump, Restore, Delete.
//
// As in Redis, PFAdd and the Bloom and cuckoo adds create a missing key
// (with RedisBloom's default geometry: DefaultBloomSpec,
// DefaultCuckooSpec), while the Count-Min and Top-K commands need the key
// created first (CMSInitByDim, TopKReserve) and report ErrCMSKeyNotFound
// or ErrTopKKeyNotFound otherwise. Reading commands answer a missing key
// as Redis does (PFCount 0, BFExists false); the INFO commands fail with
// an error wrapping sieve.ErrNotFound. Errors are tested with errors.Is:
// ErrWrongType for a key holding another kind of sketch, ErrInvalidArgument
// for parameters out of RedisBloom's ranges, ErrFilterFull, ErrItemExists,
// and the CMS and Top-K errors, whose RedisBloom reply text RedisBloomText
// returns.
//
// # Blind writes
//
// A command whose reply depends on the value (PFAdd, BFAdd, CFDel, ...)
// reads the key, then writes its operand. Its blind variant — PFAddBlind,
// BFAddBlind, CFAddBlind, CMSIncrByBlind, TopKAddBlind — writes the same
// operand without a reply and, but for BFAddBlind on a paged Bloom filter
// (which reads the pages its items touch, to count only new items) and
// CFAddBlind on a paged cuckoo filter (which places its items under the
// key's lock, reading the pages of their buckets: where a fingerprint
// goes depends on what the filter holds), and CMSIncrByBlind and
// TopKAddBlind on an existing paged sketch (which run the replied command
// under the key's lock, from the cache of hot sketches, and drop the
// reply: Count-Min needs the header's geometry, Top-K the pages its items
// touch to offer them to the heap), without reading: a bulk load's cost
// is the operands'. The price is that nothing is checked when it is written: a
// blind write to a key of another kind is dropped when merged, a blind
// add to a missing key creates it with the default geometry (also for
// Count-Min and Top-K, which RedisBloom would refuse), a Bloom add past a
// non-scaling filter's capacity overfills it, and a cuckoo add that finds
// no room is dropped and counted (CFInfo.ItemsDropped). "Blind writes that
// cannot succeed" below has the details.
//
// # Batches and transactions
//
// A Batch (Store.NewBatch) collects blind writes and restores — PFAdd,
// BFAdd, CFAdd, CMSIncrBy, TopKAdd, Restore — and commits them atomically,
// in one WAL write, with Commit (its BFAdd, like BFAddBlind, reads the
// pages a paged filter's items touch; its CFAdd on a paged cuckoo filter
// writes the items as pending adds in the header, which the key's next
// command places first). Its Sieve method returns the
// underlying sieve.Batch, to which writes to other column families of the
// same database may be added; Store.WrapBatch makes a Batch that adds to a
// sieve.Batch of your own. (Either turns the Store's cache of HyperLogLog
// registers off for good, since the Store cannot see when such a batch is
// applied; PFAdd then reads the key every time.) A batch of your own that
// deletes or replaces a Bloom filter's key adds Store.DropPages for it, or
// the filter's pages stay behind.
//
// For commands that read, Store.WithBatch returns a view of the Store that
// reads through an indexed batch (sieve.DB.NewIndexedBatch) and writes into
// it: each command sees the batch's earlier writes, and nothing reaches
// the database until Store.Apply commits the batch, all or nothing:
//
//	b := db.NewIndexedBatch()
//	tx := st.WithBatch(b)
//	added, err := tx.BFAdd([]byte("seen"), url)
//	if added {
//		_, err = tx.PFAdd([]byte("new-urls"), url)
//	}
//	err = st.Apply(b, nil) // commit; nil: the batch may write any key
//
// The view takes the Store's per-key locks as the Store does, but nothing
// stops other writers between its reads and Apply: if the transaction must
// be isolated, exclude them yourself (sieve-server runs MULTI/EXEC holding
// its keyspace exclusively). Deferred is for a server answering a pipeline
// of PFADDs: each reply is computed at once, and the operands are written
// together in one batch (its doc states the caller's contract).
//
// # Dump and Restore
//
// Dump returns a key's value as a compaction would leave it: the same
// bytes before and after compaction, and for a HyperLogLog exactly what
// Redis's GET returns. Restore sets a key to such a value, replacing
// whatever it held, after checking it whole (a malformed value returns an
// error wrapping ErrCorruption and writes nothing): a backup, a copy
// between databases, or a HyperLogLog moved from Redis. The values of the
// other kinds are sieve's own (sketchcol/FORMAT.md), not RedisBloom's
// SCANDUMP chunks.
//
// # Concurrency
//
// A Store is safe for concurrent use. Commands that read before they
// write hold a per-key lock, so their replies are those of some serial
// order: of several concurrent BFAdds of one item, exactly one reports it
// added. Read-only commands and blind writes take no lock (BFAddBlind on a
// paged Bloom filter excepted; Store says how they interleave with the
// others). Several Stores on one database are
// correct together only for blind writes and reads: each keeps its own
// locks and cache. A Batch and a Deferred are not safe for concurrent use.
// Package-level functions and Merger are safe for concurrent use; the
// decoded values (HLL, ScalableBloom, CuckooFilter, CountMinSketch, TopK)
// are not safe for concurrent mutation.
//
// # Cost of a command
//
// A key's value is read whole: a read merges the key's operands not yet
// compacted (decoding the value, applying them, encoding it again) and
// the command decodes the result. So a command with a reply, or an
// EXISTS, costs about the size of the value — a 12 KB dense HyperLogLog,
// a cuckoo filter of one or two bytes per item of capacity — while a blind
// write costs the size of its operand. Probe many items of a cuckoo filter
// with CFMExists (one read). Exceptions: a paged Bloom filter's command
// reads its header and the pages its items touch, whatever the filter's
// size; so does a paged cuckoo filter's (two pages per sub-filter per
// item, and those its evictions visit); so does a paged Count-Min or
// Top-K sketch's (one page per row per item; CMS.INFO, TOPK.LIST and
// TOPK.INFO the header only), answered from a bounded cache of the hot
// sketches' headers and pages; and PFAdd answers from a bounded cache of the decoded
// registers of hot keys, so a hot key's PFAdd costs its elements' hashes
// and its operand. A PFCount of a compacted key is one read, answered from
// the HyperLogLog's cached cardinality.
//
// # Beneath the Store
//
// Each command is also two exported functions over bytes, for callers that
// route or batch commands themselves: a Reply function computes Redis's
// answer from the current value (PFAddReply, BFAddReply, CFDelReply,
// CMSIncrByReply, ...), and an Op function builds the operand to write
// (PFAddOp, BFAddOp, CFDelOp, CMSIncrByOp, SetOp, ...). For HyperLogLogs
// a Store command reads the value, calls the Reply and merges the Op; its
// blind variant merges the Op alone. Merger is the merge operator they
// rely on. The Bloom, cuckoo, Count-Min and Top-K Op functions build
// operands of the whole-value encoding, which the Store still reads but no
// longer creates (its sketches are paged): merged onto a paged sketch they
// are dropped, so they are deprecated; write through Store.NewBatch or
// Store.WrapBatch instead.
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

// Where things are (for contributors).
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
// murmur.go (the hash HLL positions come from). A Bloom value stored whole
// stacks the filter package's StandardBloomFilter; a paged Bloom filter
// is pbloom.go (header and geometry), pbloom_page.go (pages and
// PageMerger), pbloom_store.go (its commands) and pbloom_dump.go (Dump and
// Restore). A cuckoo value stacks internal/cuckoo's Table. Paged Count-Min
// and Top-K sketches are cms_paged.go and topk_paged.go (header, pages,
// their operands and merges), cms_paged_store.go and topk_paged_store.go
// (their commands), counters_dump.go (Dump and Restore) and
// counters_cache.go (the cache of hot sketches).
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
