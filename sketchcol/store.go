package sketchcol

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/lockrank"
)

// ColumnFamilyName is the column family the Store keeps its sketches in.
const ColumnFamilyName = "sketch"

// ErrItemExists is returned by BFReserve and CFReserve on a key that
// already holds a filter of that kind (RedisBloom's "ERR item exists").
var ErrItemExists = errors.New("sketchcol: item exists")

// Store runs Redis and RedisBloom commands on the sketch column family of
// a DB: PFADD/PFCOUNT/PFMERGE on HyperLogLogs, BF.* on scalable Bloom
// filters, CF.* on cuckoo filters. Every write is a merge operand (FORMAT.md,
// "Operands"); compaction collapses a key's operands into one value.
//
// # Concurrency
//
// A Store is safe for concurrent use. Commands whose reply depends on the
// value (PFAdd, PFMerge, BFReserve, BFAdd, BFMAdd, BFInsert, CFReserve,
// CFAdd, CFAddNX, CFDel, Restore) read the key and then write an operand
// while holding the key's stripe of a lock array, so their replies are those
// of some serial order of these commands: of several concurrent BFAdds of
// one item, exactly one reports it added. Read-only commands take no lock.
//
// Blind variants (PFAddBlind, BFAddBlind, CFAddBlind and a Batch) never
// read and take no lock (but CFAddBlind on a paged cuckoo filter, whose
// placement depends on what it holds, which adds under the key's lock,
// cuckoo_store.go): they are for bulk ingestion, where the replies are
// not wanted. They commute with the locked commands the way their operands
// do (the package doc, "The merge algebra"), with two consequences worth knowing: a
// blind write to a key of another kind is dropped silently (the locked
// commands report ErrWrongType instead), and a blind add that reaches a
// missing key first creates it with the default geometry, so a BFReserve
// or CFReserve racing with it finds the key existing (or, having checked
// first, writes a reserve operand that then changes nothing).
//
// The Store holds no state of its own beyond the locks and a bounded cache
// of decoded values (HyperLogLog registers, paged Bloom headers, paged
// Count-Min and Top-K headers and pages) that its commands answer from
// (every write through the Store keeps it exact):
// several Stores on one DB are correct together only for blind writes and
// reads.
type Store struct {
	*storeState
	// view is the indexed batch of a view (WithBatch): reads go through
	// it, writes into it, and the cache is neither read nor filled.
	view *sieve.Batch
}

// storeState is what a Store and its views share.
type storeState struct {
	db    *sieve.DB
	cf    *sieve.ColumnFamily
	pages *sieve.ColumnFamily // the paged filters' pages (pbloom_page.go)
	wo    *sieve.WriteOptions
	seed  maphash.Seed
	locks [lockStripes]paddedMutex

	// The decoded-value cache of PFAdd (hll_cache.go).
	epochs   cacheEpochs
	hllCache [lockStripes]hllCacheStripe
	hint     *cacheHints
	// What the cached pages of paged filters take (pbloom_pcache.go).
	pageBudget pageBudget
	// The paged Count-Min and Top-K sketches' cache (counters_cache.go).
	counters counterCache
	// The cuckoo filters Deferreds added to last (pcuckoo_dcache.go).
	cuckooCache [lockStripes]cuckooCacheSlot
}

// StoreOptions configure a Store. The zero value (and nil) is the default.
type StoreOptions struct {
	// Sync makes every write of the Store durable before the command
	// returns (sieve.Sync). The default acknowledges a write once it is
	// in the WAL's OS buffers and the memtable (sieve.NoSync): THIS CAN
	// LOSE RECENTLY ACKNOWLEDGED WRITES ON A CRASH (never on a clean
	// Close); what survives is a prefix of the writes. Batches choose
	// their own options in Batch.Commit.
	Sync bool

	// PageCacheSize bounds the memory of the cache of paged filters'
	// pages (their bits as the Store's last commands left them), which
	// lets a command on a page it holds skip the LSM read. Zero means the
	// default, 128 MiB (a Bloom filter for 100M items at 1% whole); negative
	// turns the cache off. It costs nothing until paged filters are used.
	PageCacheSize int64

	// merger replaces Merger{} (tests count its calls).
	merger sieve.Merger
}

// DefaultPageCacheSize is StoreOptions.PageCacheSize's default.
const DefaultPageCacheSize = 128 << 20

// lockStripes is the size of the lock array. Keys hash onto stripes, so
// two keys may share one; with 256 stripes and a handful of goroutines
// that costs nothing measurable.
const lockStripes = 256

// paddedMutex keeps neighbouring stripes on separate cache lines. Stripes
// rank first in the DB's lock order (lockrank.SketchKey, see the root
// package's locks.go): a command holds one while it reads and writes the
// DB, and never two.
type paddedMutex struct {
	lockrank.Mutex
	_ [48]byte
}

// Open opens the column family "sketch" of db with the sketch merger,
// creating it if it does not exist, and returns a Store on it with the
// default options (writes are not synced; see StoreOptions.Sync).
func Open(db *sieve.DB) (*Store, error) { return OpenWithOptions(db, nil) }

// OpenWithOptions is Open with options (nil: the defaults).
func OpenWithOptions(db *sieve.DB, o *StoreOptions) (*Store, error) {
	var opts StoreOptions
	if o != nil {
		opts = *o
	}
	m := opts.merger
	if m == nil {
		m = Merger{}
	}
	cf, err := db.OpenColumnFamily(ColumnFamilyName, &sieve.ColumnFamilyOptions{Merger: m})
	if err != nil {
		return nil, fmt.Errorf("sketchcol: opening column family %q: %w", ColumnFamilyName, err)
	}
	// Hot pages are read from the Store's page caches, so collapsing their
	// operands in the memtable (MaxSuccessiveMerges) only costs writes.
	pages, err := db.OpenColumnFamily(PagesColumnFamilyName, &sieve.ColumnFamilyOptions{Merger: PageMerger{}, MaxSuccessiveMerges: -1})
	if err != nil {
		return nil, fmt.Errorf("sketchcol: opening column family %q: %w", PagesColumnFamilyName, err)
	}
	s := &Store{storeState: &storeState{db: db, cf: cf, pages: pages, wo: sieve.NoSync, seed: maphash.MakeSeed(), hint: new(cacheHints)}}
	for i := range s.hllCache {
		s.hllCache[i].hint = s.hint
	}
	for i := range s.locks {
		s.locks[i].Init(lockrank.SketchKey)
	}
	if opts.Sync {
		s.wo = sieve.Sync
	}
	s.pageBudget.limit = opts.PageCacheSize
	if opts.PageCacheSize == 0 {
		s.pageBudget.limit = DefaultPageCacheSize
	}
	return s, nil
}

// ColumnFamily returns the column family the Store writes (for Compact,
// Metrics and iteration). Writing it directly bypasses the Store's
// validation: a value that is not a sketch makes the Store's commands on
// that key fail. (It is not called CF: every CF* method of the package is
// a cuckoo filter command.)
func (s *Store) ColumnFamily() *sieve.ColumnFamily { return s.cf }

// stripe returns key's stripe of the lock array (and of the cache).
func (s *Store) stripe(key []byte) int { return int(s.keyHash(key) % lockStripes) }

// keyHash is the 64-bit hash of key that its stripe is taken from and
// the cache maps it by.
func (s *Store) keyHash(key []byte) uint64 { return maphash.Bytes(s.seed, key) }

// hashKey returns key's stripe and keyHash.
func (s *Store) hashKey(key []byte) (int, uint64) {
	h := s.keyHash(key)
	return int(h % lockStripes), h
}

// lock locks key's stripe and returns its unlock.
func (s *Store) lock(key []byte) func() {
	m := &s.locks[s.stripe(key)]
	m.Lock()
	return m.Unlock
}

// getter is a source of values: the column family's latest state or a
// snapshot of it.
type getter func(key []byte) ([]byte, error)

// get returns key's value, nil for a missing key. A value that is not a
// sketch at all (written around the Store) fails with an error wrapping
// both ErrWrongType (what Redis answers for a key of another type) and
// ErrCorruption (the Store never writes such a value).
func (s *Store) get(key []byte) ([]byte, error) {
	if s.view != nil {
		return getFrom(s.viewGet, key)
	}
	return getFrom(s.cf.Get, key)
}

func (s *Store) viewGet(key []byte) ([]byte, error) { return s.view.GetCF(s.cf, key) }

// WithBatch returns a view of the Store whose commands read through b, an
// indexed batch of the Store's DB (sieve.DB.NewIndexedBatch), and add
// their writes to b instead of writing the DB: a transaction. Commit b
// with Apply (nil keys, or the keys written), which keeps the Store's
// cache exact. The view holds the Store's per-key locks as the Store
// does, but nothing stops other writers between the view's reads and the
// commit: the caller excludes them (sieve-server runs MULTI/EXEC holding
// its keyspace exclusively).
func (s *Store) WithBatch(b *sieve.Batch) *Store { return &Store{storeState: s.storeState, view: b} }

func getFrom(g getter, key []byte) ([]byte, error) {
	v, err := g(key)
	switch {
	case errors.Is(err, sieve.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case v == nil:
		v = []byte{} // present but empty: not a sketch, and not missing either
	}
	if _, err := KindOf(v); err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrWrongType, clip(key), err)
	}
	return v, nil
}

// snapshotGetter returns a getter reading one snapshot of the column
// family, and its release.
func (s *Store) snapshotGetter() (getter, func()) {
	if s.view != nil {
		return s.viewGet, func() {}
	}
	snap := s.db.NewSnapshot()
	return func(key []byte) ([]byte, error) { return snap.GetCF(s.cf, key) }, func() { _ = snap.Close() }
}

// merge writes one operand for key (and makes key's cached registers
// stale: every write but PFAdd's own goes through merge, Restore, Put,
// Delete or a Batch, all of which do).
func (s *Store) merge(key, operand []byte) error {
	err := s.writeMerge(key, operand)
	s.invalidate(key)
	return err
}

// writeMerge, writePut and writeDelete write the DB, or a view's batch.
func (s *Store) writeMerge(key, operand []byte) error {
	if s.view != nil {
		return s.view.MergeCF(s.cf, key, operand)
	}
	return s.cf.Merge(key, operand, s.wo)
}

func (s *Store) writePut(key, value []byte) error {
	if s.view != nil {
		return s.view.PutCF(s.cf, key, value)
	}
	return s.cf.Put(key, value, s.wo)
}

func (s *Store) writeDelete(key []byte) error {
	if s.view != nil {
		return s.view.DeleteCF(s.cf, key)
	}
	return s.cf.Delete(key, s.wo)
}

// notFound is the error of a command that needs an existing key
// (BF.INFO, CF.INFO, CF.DEL, Dump, BF.INSERT NOCREATE).
func notFound(key []byte) error {
	return fmt.Errorf("sketchcol: key %q: %w", clip(key), sieve.ErrNotFound)
}

// Dump returns the bytes of key's value: for a HyperLogLog exactly Redis's
// format (what GET returns there), which redis-server accepts with SET and
// counts the same. The value is as a compaction would leave it (operands
// applied, HLL cache valid), so Dump returns the same bytes before and
// after a compaction. A missing key returns an error wrapping
// sieve.ErrNotFound.
//
// A paged Bloom filter's dump carries its header and every page written
// (FORMAT.md, "Paged Bloom dump"): it is as large as the filter.
func (s *Store) Dump(key []byte) ([]byte, error) {
	v, err := s.get(key)
	if err == nil && v == nil {
		err = notFound(key)
	}
	if err == nil && v[0] == kindPagedBloom {
		return s.dumpPaged(key, v)
	}
	if err == nil && (v[0] == kindPagedCMS || v[0] == kindPagedTopK) {
		return s.dumpCounters(key, v)
	}
	if err == nil && v[0] == kindPagedCuckoo {
		return s.dumpPagedCuckoo(key)
	}
	return v, err
}

// Restore sets key to value, replacing whatever it held (like SET, not
// Redis's RESTORE: no BUSYKEY error). value is any sketch value — an HLL
// taken from Redis with GET, or bytes from Dump — and is checked whole
// first: a malformed or foreign value returns an error wrapping
// ErrCorruption and writes nothing. An HLL is stored with its cached
// cardinality recomputed from its registers (Redis leaves it stale after
// PFADD, and a cache is never trusted from outside), so a PFCount of it
// is one read; its encoding is kept as given.
func (s *Store) Restore(key, value []byte) error {
	if len(value) > 0 && (value[0] == kindPagedBloomDump || value[0] == kindPagedBloom) {
		d, err := parsePagedDump(value)
		if value[0] == kindPagedBloom { // a header alone: an empty filter of its geometry
			var h *pagedBloom
			h, err = parsePagedBloom(value)
			d = &pagedDump{header: h, raw: value}
		}
		if err != nil {
			return fmt.Errorf("sketchcol: restore: %w", err)
		}
		defer s.lock(key)()
		return s.restorePaged(key, d)
	}
	if d, ok, err := countersRestore(value); ok { // a paged Count-Min or Top-K sketch
		if err != nil {
			return fmt.Errorf("sketchcol: restore: %w", err)
		}
		defer s.lock(key)()
		return s.restoreCounters(key, d)
	}
	if len(value) > 0 && (value[0] == kindPagedCuckooDump || value[0] == kindPagedCuckoo) {
		return s.restoreCuckoo(key, value)
	}
	v, err := restoreValue(value)
	if err != nil {
		return err
	}
	defer s.lock(key)()
	err = s.writePut(key, v)
	s.invalidate(key)
	return err
}

// Put stores value at key as it is, replacing whatever the key held,
// without validating it: for a caller that keeps other values than
// sketches in the family (sieve-server keeps Redis strings there). A value
// that is not a sketch makes the Store's commands on that key return an
// error wrapping ErrWrongType (and ErrCorruption), and blind operands
// merged onto it make reads of the key fail: write only locked commands
// to such keys. An HLL value put here is used as given (cache included:
// use Restore to have it checked and its cache recomputed).
func (s *Store) Put(key, value []byte) error {
	defer s.lock(key)()
	err := s.writePut(key, value)
	s.invalidate(key)
	return err
}

// Delete deletes key, whatever it holds, and the pages a paged filter
// keeps (one range deletion in their family, written whatever the key
// held, so that no read is needed).
func (s *Store) Delete(key []byte) error {
	defer s.lock(key)()
	err := s.writeKey(key, func(wb *sieve.Batch) error {
		if err := wb.DeleteCF(s.cf, key); err != nil {
			return err
		}
		return s.dropPages(wb, key)
	})
	s.releaseCached(s.stripe(key), key)
	return err
}

// Apply applies b, a batch of the Store's DB whose writes to the Store's
// family are to keys (nil: to any key), with the Store's write options,
// and keeps the cache exact: the keys' stripes (or the whole cache) are
// made stale once it is applied, and the pages cached for those keys (or
// for every key) are released. It takes the keys' stripe locks only after
// the write, one at a time, for that.
func (s *Store) Apply(b *sieve.Batch, keys [][]byte) error {
	if s.view != nil {
		return errViewApply
	}
	err := s.db.Apply(b, s.wo)
	s.Invalidate(keys)
	return err
}

// Invalidate makes what the Store caches for keys (nil: for every key)
// stale and releases their cached pages, as Apply does after its write:
// for a caller that wrote the Store's families another way (a replicated
// state machine applying a batch made on another node). It takes the
// keys' stripe locks one at a time. On a view (WithBatch) it does
// nothing.
func (s *Store) Invalidate(keys [][]byte) {
	if s.view != nil {
		return
	}
	if keys == nil {
		s.invalidateAll()
		s.releaseAllPages()
	}
	for _, k := range keys {
		s.invalidate(k)
		unlock := s.lock(k)
		s.releaseCached(s.stripe(k), k)
		unlock()
	}
}

var errViewApply = errors.New("sketchcol: Apply on a view (WithBatch); apply the view's batch with the Store")

// restoreValue validates value and returns what to store.
func restoreValue(value []byte) ([]byte, error) {
	if len(value) > 0 && (value[0] == kindPagedBloomDump || value[0] == kindPagedBloom) {
		// A paged filter is its header and its pages: only Store.Restore
		// (restorePaged) writes both.
		return nil, fmt.Errorf("%w: a paged Bloom filter is restored with Store.Restore, not written as one value", ErrInvalidArgument)
	}
	if _, ok, _ := countersRestore(value); ok {
		return nil, fmt.Errorf("%w: a paged Count-Min or Top-K sketch is restored with Store.Restore, not written as one value", ErrInvalidArgument)
	}
	if len(value) > 0 && (value[0] == kindPagedCuckooDump || value[0] == kindPagedCuckoo) {
		return nil, fmt.Errorf("%w: a paged cuckoo filter is restored with Store.Restore, not written as one value", ErrInvalidArgument)
	}
	s, err := decodeValue(value)
	if err != nil {
		return nil, fmt.Errorf("sketchcol: restore: %w", err)
	}
	h, ok := s.(*HLL)
	if !ok {
		return value, nil
	}
	h.cardValid = false
	return setHLLCache(bytes.Clone(value), h.Count()), nil
}

// readReply answers a read-only command: reply computes it from key's
// current value (nil for a missing key).
func readReply[R any](s *Store, key []byte, reply func(cur []byte) (R, error)) (R, error) {
	cur, err := s.get(key)
	if err != nil {
		var zero R
		return zero, err
	}
	return reply(cur)
}

// mergeOp returns a function that writes the operand an Op function built
// (or returns its error): s.mergeOp(key)(BFAddOp(nil, items...)).
func (s *Store) mergeOp(key []byte) func(op []byte, err error) error {
	return func(op []byte, err error) error {
		if err != nil {
			return err
		}
		return s.merge(key, op)
	}
}
