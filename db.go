// Package sieve is an embedded key-value storage engine: a log-structured
// merge tree (LSM) built for point lookups, with a filter in every table
// (a cache-line-blocked Bloom filter by default; classic Bloom, cuckoo,
// binary fuse and Ribbon per database, column family or level: package
// filter), column families with merge operators, snapshots, atomic
// batches, range deletions, prefix seeks, checkpoints and external-table
// ingestion.
//
//	db, err := sieve.Open("data", nil) // nil Options: the defaults
//	if err != nil { ... }
//	defer db.Close()
//	err = db.Put([]byte("hello"), []byte("world"), sieve.Sync)
//	v, err := db.Get([]byte("hello")) // ErrNotFound when absent
//
// The examples show the rest of the API: batches ([DB.Apply]), iterators
// ([DB.NewIter], [Iterator.SeekPrefixGE]), snapshots ([DB.NewSnapshot]),
// column families and merge operators ([DB.OpenColumnFamily],
// [DB.Merge]), filter policies ([Options]), ingestion ([DB.Ingest]) and
// compaction ([DB.Compact]). Package sketchcol keeps HyperLogLogs, Bloom
// and cuckoo filters, Count-Min and Top-K sketches in a column family, with
// Redis's and RedisBloom's commands.
//
// Durability: a write with [Sync] is durable once acknowledged. With
// [NoSync] (and nil WriteOptions) a crash may lose the last acknowledged
// writes, never more than that: what survives is a prefix of them. Close
// makes every acknowledged write durable.
//
// Concurrency: a *DB is safe for concurrent use by many goroutines. Writers
// are batched by a group-commit pipeline; readers (Get, iterators,
// snapshots) never block writers: they pin an immutable view (memtables plus
// a reference-counted version of the table set) and read from it.
//
// Errors: test them with errors.Is against the package's Err variables.
// An error caused by bad bytes on disk wraps [ErrCorruption] and names the
// file, the offset and the check that failed.
//
// Further reading, in the repository: the [README] (a tour, the tools,
// caveats and limitations), [doc/DESIGN.md] (the architecture: write and
// read paths, flush, compaction, recovery), [doc/tuning.md] (the options
// and the memory outside the cache), [doc/performance.md] (measurements
// and the commands that make them) and [FORMAT.md] (the directory layout
// and the batch encoding).
//
// [README]: https://github.com/sievedb/sieve/blob/main/README.md
// [doc/DESIGN.md]: https://github.com/sievedb/sieve/blob/main/doc/DESIGN.md
// [doc/tuning.md]: https://github.com/sievedb/sieve/blob/main/doc/tuning.md
// [doc/performance.md]: https://github.com/sievedb/sieve/blob/main/doc/performance.md
// [FORMAT.md]: https://github.com/sievedb/sieve/blob/main/FORMAT.md
package sieve

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/lockrank"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/percpu"
	"github.com/sievedb/sieve/vfs"
	"github.com/sievedb/sieve/wal"
)

// DB is an open database. Close it when done.
type DB struct {
	dirname string
	opts    *Options
	fs      vfs.FS
	lock    io.Closer
	closed  atomic.Bool

	// walRecovery is what Open's WAL replay dropped; written only by
	// Open, read by Metrics.
	walRecovery WALRecoveryReport

	// commit is the write pipeline (commit.go).
	commit commitPipeline

	// Owned by the commit leader (the one goroutine holding
	// commit.leading): the WAL being written and the last assigned
	// sequence number.
	log    walHandle
	logSeq uint64
	// walFlushPending is set while a timer to write the WAL buffer is armed.
	walFlushPending atomic.Bool

	// visibleSeq is the highest sequence number whose write is fully
	// applied; readers read as of it.
	visibleSeq atomic.Uint64
	// metaShare is the index and filter bytes per table byte of the last
	// table written (float64 bits): times the live table bytes, the
	// metadata Options.PartitionAbove is compared with.
	metaShare atomic.Uint64

	// mu is lock rank DB (locks.go).
	mu struct {
		lockrank.Mutex
		cond sync.Cond
		// mem takes new writes; imm holds full groups waiting for a
		// flush, oldest first.
		mem *memGroup
		imm []*memGroup
		// bgErr is the sticky error that put the DB in read-only
		// mode: a failed WAL write or fsync, a failed manifest write, a
		// corruption found in the background.
		bgErr error
		// snapshots lists open snapshots' sequence numbers.
		snapshots snapshotList
		// wals lists the WAL files on disk, oldest first.
		wals []uint64
		// dataGen counts the edits that change what a read at the
		// visible sequence number returns without advancing it (a
		// copy-path Ingest, whose keys are at sequence number 0); every
		// read state records it (readState.gen).
		dataGen uint64
	}
	flush   flushState   // guarded by mu
	compact compactState // guarded by mu

	// rsMu (rank ReadState) serializes publishing rs; readers load rs
	// without it (loadReadState).
	rsMu lockrank.Mutex
	rs   atomic.Pointer[readState] // nil after Close
	// maxL0 is the most L0 tables of any column family in rs.version,
	// kept with rs so that every write's stall check is one atomic load.
	maxL0 atomic.Int32
	// openIters counts the iterators open on a read state (Close
	// reports them).
	openIters atomic.Int64

	// failedBG is set (under mu) when mu.bgErr is: the commit leader's
	// fast path (makeRoomForWrite) reads it without mu.
	failedBG atomic.Bool

	versions *manifest.VersionSet
	// versionMu (rank Version) serializes manifest writes: held only by
	// logAndApply (manifest.go).
	versionMu lockrank.Mutex

	cfs *cfRegistry
	// mergeCaps holds the families' own MaxSuccessiveMerges
	// (ColumnFamilyOptions), by family ID; copied on write.
	mergeCaps atomic.Pointer[map[uint32]int]
	// cfFilters holds the families' CompactionFilters (expiry.go).
	cfFilters atomic.Pointer[map[uint32]CompactionFilter]

	tables *tableCache
	// pinning: Options.PinL0FilterAndIndexBlocks is in effect.
	pinning bool

	metrics dbMetrics

	bg sync.WaitGroup // background goroutines
	// seekFlushWG counts the goroutines rotating a memtable for seeks
	// (seekcompact.go). They take the commit pipeline, so Close waits for
	// them before it takes it, not with bg.
	seekFlushWG sync.WaitGroup
}

// walHandle is the WAL being appended to.
type walHandle struct {
	num uint64
	f   vfs.File
	w   *wal.Writer
}

// readState is an immutable view of the data a read may need: the
// memtables and the table version. It is reference counted in per-
// processor stripes (percpu.Ref: a Get's pin and unpin write a line of its
// own processor, not one every reader shares); when the publisher has
// retired it and the last reference is gone, the version is released.
type readState struct {
	refs    percpu.Ref
	mem     *memGroup
	imm     []*memGroup // oldest first
	version *manifest.Version
	// gen is db.mu.dataGen when the state was published: two read states
	// with the same gen, read at the same sequence number, give the same
	// data (flushes and compactions move data, never change it).
	gen uint64
}

// newReadState returns a read state held by its publisher.
func newReadState(mem *memGroup, imm []*memGroup, v *manifest.Version, gen uint64) *readState {
	rs := &readState{mem: mem, imm: imm, version: v, gen: gen}
	rs.refs.Init(v.Unref)
	return rs
}

// unref drops a reference taken by loadReadState. A caller that knows its
// stripe (Get) uses unrefAt.
func (rs *readState) unref() { rs.refs.Release(percpu.Index()) }

// unrefAt drops a reference taken by loadReadStateAt(p).
func (rs *readState) unrefAt(p int) { rs.refs.Release(p) }

// loadReadState returns the current read state with a reference, or nil
// once Close has released it.
func (db *DB) loadReadState() *readState { return db.loadReadStateAt(percpu.Index()) }

// loadReadStateAt is loadReadState taking the reference on stripe p (from
// percpu.Index).
//
// Lock-free: one load and an add to the caller's stripe. A state retired
// between the load and the add has already been replaced (the publisher
// stores the new state before it retires the old one), so the retry finds
// the new one.
func (db *DB) loadReadStateAt(p int) *readState {
	for {
		rs := db.rs.Load()
		if rs == nil || rs.refs.TryAcquire(p) {
			return rs
		}
	}
}

// updateReadStateLocked publishes a new read state from db.mu's memtables
// and the current version. REQUIRES: db.mu held. Every change of the memtables and
// every install of a version happens under db.mu (logAndApply installs
// versions there), so that each read state is a state some serial history
// produced: a flushed memtable and its table are never both in one.
func (db *DB) updateReadStateLocked() {
	rs := newReadState(db.mu.mem, append([]*memGroup(nil), db.mu.imm...), db.versions.Current(), db.mu.dataGen)
	n := 0
	for _, lv := range rs.version.CFs {
		n = max(n, len(lv[0]))
	}
	db.rsMu.Lock()
	old := db.rs.Swap(rs)
	db.maxL0.Store(int32(n))
	db.rsMu.Unlock()
	if old != nil {
		old.refs.Retire()
	}
}

// Open opens the database in dirname, creating it (and the directory) if
// it does not exist. nil opts means defaults.
func Open(dirname string, opts *Options) (db *DB, err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("sieve: open %s: internal error: %v", dirname, r)
		}
	}()
	db = &DB{dirname: dirname, opts: o, fs: o.FS}
	db.initLocks()
	if err := db.open(); err != nil {
		db.releaseOnFailedOpen()
		return nil, explainOpenError(dirname, err)
	}
	return db, nil
}

func (db *DB) releaseOnFailedOpen() {
	if db.log.w != nil {
		db.log.w.Close()
		db.log.f.Close()
	}
	if db.tables != nil {
		db.tables.close()
	}
	if db.versions != nil {
		db.versions.Close()
	}
	if db.lock != nil {
		db.lock.Close()
	}
}

func (db *DB) open() error {
	fs, dirname := db.fs, db.dirname
	if !db.opts.ReadOnly {
		if err := fs.MkdirAll(dirname, 0o755); err != nil {
			return fmt.Errorf("sieve: creating %s: %w", dirname, err)
		}
	}
	lock, err := fs.Lock(base.MakeFilename(dirname, base.FileTypeLock, 0))
	if err != nil {
		if !errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("sieve: locking %s: %w", dirname, err) // an I/O error, not contention
		}
		return fmt.Errorf("%w: %s: %v", ErrLocked, dirname, err)
	}
	db.lock = lock
	exists, err := manifest.Exists(fs, dirname)
	if err != nil {
		return err
	}
	vopts := manifest.Options{OnObsolete: db.onObsoleteTables, ReadOnly: db.opts.ReadOnly}
	switch {
	case exists && db.opts.ErrorIfExists:
		return fmt.Errorf("sieve: database %s already exists (ErrorIfExists)", dirname)
	case !exists && db.opts.ReadOnly:
		return fmt.Errorf("sieve: no database in %s to open read-only", dirname)
	case exists:
		db.versions, err = manifest.Load(fs, dirname, vopts)
	default:
		if err := checkNoOrphanData(fs, dirname); err != nil {
			return err
		}
		db.versions, err = manifest.Create(fs, dirname, vopts)
	}
	if err != nil {
		return err
	}
	dir, err := db.checkDir()
	if err != nil {
		return err
	}
	db.tables = newTableCache(db)
	db.pinning = db.opts.pins()
	db.cfs = newCFRegistry(db)
	if err := db.cfs.load(); err != nil {
		return err
	}
	db.setCompactionFilter(0, db.opts.CompactionFilter)
	if err := db.recover(dir); err != nil {
		return err
	}
	if db.walRecovery.Dropped() && !db.opts.ReadOnly {
		// Flush what was replayed before any new write: the damaged WALs
		// must never be replayed again (point-in-time recovery would stop
		// at the same damage and drop the writes after it).
		db.mu.Lock()
		err := db.waitFlushedLocked(db.mu.mem.logNum)
		db.mu.Unlock()
		if err != nil {
			return err
		}
		db.opts.Logger.Warn("WAL recovery dropped damaged data", "report", db.walRecovery.String())
	}
	return nil
}

// checkNoOrphanData refuses to create a database in a directory without
// CURRENT that holds tables or WALs: that is a database whose CURRENT was
// lost, and a new one would delete its tables as obsolete. (A crash during
// creation leaves at most a manifest and a temporary file.)
func checkNoOrphanData(fs vfs.FS, dirname string) error {
	names, err := fs.List(dirname)
	if err != nil {
		return err
	}
	for _, name := range names {
		if t, _, ok := base.ParseFilename(name); ok && (t == base.FileTypeTable || t == base.FileTypeLog) {
			return fmt.Errorf("sieve: %s has no CURRENT file but holds database files (%s): "+
				"refusing to create a new database over them", dirname, name)
		}
	}
	return nil
}

// Close flushes nothing but makes every acknowledged write durable (the WAL
// is synced), waits for background work, and releases the directory. A
// second Close returns nil.
func (db *DB) Close() error {
	// closed is set under db.mu: background work that fails from here on
	// finds it set (and its error is reported below), and a manual
	// compaction cannot join db.bg after Close starts waiting on it.
	db.mu.Lock()
	if !db.closed.CompareAndSwap(false, true) {
		db.mu.Unlock()
		return nil
	}
	bgBefore := db.mu.bgErr
	leaked := leakError(int(db.openIters.Load()), len(db.mu.snapshots.seqs))
	// Wake a writer stalled on a flush, then take the commit pipeline so
	// that no write is in flight.
	db.mu.cond.Broadcast()
	db.mu.Unlock()
	db.seekFlushWG.Wait()
	db.commit.acquire()
	defer db.commit.release()
	db.bg.Wait()

	var errs []error
	// A background job that failed while Close waited for it (other than
	// by being cancelled) is reported here: no later call would see it.
	// An error from before Close was already returned to writers (only
	// the first error is kept, so "new" means there was none before).
	db.mu.Lock()
	if bgBefore == nil && db.mu.bgErr != nil {
		errs = append(errs, db.mu.bgErr)
	}
	db.mu.Unlock()
	if db.log.w != nil {
		werr := db.log.w.Close()
		errs = append(errs, werr, db.log.f.Close())
		db.mu.Lock()
		healthy := db.mu.bgErr == nil
		db.mu.Unlock()
		if werr == nil && healthy {
			// Record that the WAL ended cleanly: if it is later found
			// without its trailer, it was cut (at a record boundary, or
			// recovery would see a torn chunk), not torn by a crash.
			errs = append(errs, db.logAndApply(&manifest.VersionEdit{HasSealedLog: true, SealedLog: db.log.num}, nil))
		}
	}
	db.rsMu.Lock()
	if rs := db.rs.Swap(nil); rs != nil {
		rs.refs.Retire()
	}
	db.rsMu.Unlock()
	errs = append(errs, db.versions.Close())
	db.tables.close()
	errs = append(errs, db.lock.Close(), leaked)
	return errors.Join(errs...)
}

// leakError is Close's error for iterators and snapshots left open.
func leakError(iters, snaps int) error {
	if iters == 0 && snaps == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d iterators and %d snapshots (close them before DB.Close)", ErrLeaked, iters, snaps)
}

// checkOpen returns ErrClosed after Close.
func (db *DB) checkOpen() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// setBackgroundErrorLocked records the first fatal error; the DB refuses
// writes from then on. REQUIRES: db.mu held.
func (db *DB) setBackgroundErrorLocked(err error) {
	if db.mu.bgErr == nil {
		db.mu.bgErr = fmt.Errorf("sieve: database is read-only after an error: %w", err)
		db.failedBG.Store(true)
		db.opts.Logger.Error("database is read-only after an error", "err", err)
	}
	db.mu.cond.Broadcast()
}

// BackgroundError returns the error that made the database read-only (a
// failed WAL write or sync, flush, compaction or MANIFEST write; it is
// also logged at error level through Options.Logger), or nil while the
// database accepts writes. Monitoring reads it (sieveprom exports it as
// sieve_background_error).
func (db *DB) BackgroundError() error { return db.checkWritable() }

// setBackgroundError is setBackgroundErrorLocked for a caller not holding
// db.mu.
func (db *DB) setBackgroundError(err error) {
	db.mu.Lock()
	db.setBackgroundErrorLocked(err)
	db.mu.Unlock()
}
