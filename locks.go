package sieve

// # Lock order
//
// Every lock and logical lock of a DB, in the one order a goroutine may
// take them (outermost first). A goroutine holding one may take only those
// below it. Under the race detector and the invariants build tag each is
// ranked (internal/lockrank) and an acquisition out of this order panics
// with both stacks the first time its code path runs, so every test under
// -race checks the order.
//
//  0. Outside the DB, not ranked: cmd/sieve-server's keyspace lock and
//     key stripes (keyspace.go), held by a command around its Store and
//     DB calls (and by a pipelining connection until its batch commits).
//  1. sketchcol.Store key stripes (lockrank.SketchKey): held across a
//     sketch command's read and its merge-operand write; one at a time.
//  2. cfRegistry.createMu (CFCreate): column family creation and merger
//     binding (OpenColumnFamily, Open).
//  3. The commit pipeline (Commit, commit.go): the head of the writer
//     queue, and a group's place in its later stages (the fsync of the
//     WAL, applying in WAL order). A writer ranks it from the moment it
//     queues (it may wait for the leader), a leader until its group is
//     applied, so several goroutines hold it at once, one per stage;
//     Flush, Close, Checkpoint and Ingest take the head with acquire (and
//     wait for the groups in flight), the WAL-buffer timer with
//     acquireWrite. The write-stage leader takes db.mu (makeRoomForWrite in
//     stall.go, rotateMemLocked; it releases db.mu before waiting for the
//     groups in flight, which take db.mu when an fsync fails), and the
//     apply-stage leader reads (collapseMerge).
//  4. DB.versionMu (Version): the manifest writer, held inside
//     logAndApply (manifest.go), the one path that writes the manifest,
//     and by Checkpoint (under Commit) while it pins what it copies.
//  5. DB.mu (DB): memtables (mem, imm), WAL list, flush and compaction
//     state, snapshots, the sticky background error; its cond wakes
//     stalled writers and Flush/Compact waiters. Versions are installed
//     under it (logAndApply), so that a read state built from it is
//     always one some serial history produced.
//  6. cfRegistry.mu (CFRegistry): the column family maps.
//  7. DB.rsMu (ReadState): publishing the read state (readers load it
//     lock-free, loadReadState).
//  8. tableCache.mu (TableCache): open table readers.
//
// Leaves, which take no other lock while held and so are not ranked: the
// commit pipeline's mutex (commitPipeline.mu: the queue, pending, the
// fsync in flight; waits on its conds hold no other lock),
// wal.Writer.errMu, manifest.VersionSet.mu (the
// current version pointer), the block cache shards (the cache's resMu,
// taken by Reserve, Unreserve and a metadata insert, takes each shard's in
// turn; a Reader's pinMu is held around Reserve and Unreserve; Lookup
// takes a data shard's lock only for a block's first hit),
// a memtable's B-tree lock (memtable/rwlock.go: it spins, never parks),
// the metrics' histogram mutex, and the in-memory file system's locks.
//
// Ingest (ingest.go) holds Commit throughout, takes versionMu and then
// db.mu as logAndApply does, and may wait on db.mu's cond for its flush
// while holding Commit (the flush goroutine takes neither Commit nor
// anything Ingest holds at that moment). While it installs its tables,
// NewSnapshot and manual compactions wait on the same cond and no
// background compaction starts.
//
// Blocking that is not a lock: Close waits for background goroutines
// (db.bg) while holding Commit, so no background job may take Commit
// (flushes and compactions do not write). The one goroutine that does,
// a seek-triggered memtable rotation (seekcompact.go: Commit, then
// db.mu, as Flush), is counted in db.seekFlushWG instead, which Close
// waits for after setting closed and before it takes Commit; it is
// started only under db.mu with closed unset. A version's last Unref deletes
// obsolete tables (file removal, directory sync) on whatever goroutine
// drops it, often under db.mu.
//
// Reference counts are not locks: the read state's and the table cache
// entries' (internal/percpu.Ref) never wait; the release a last reference
// runs (a version's Unref, a table reader's close, on a goroutine of its
// own for the latter) is whatever the previous paragraph says of it.
//
// File numbers are allocated atomically (manifest.VersionSet.NextFileNum)
// and need no lock, which is what lets a memtable rotation under db.mu
// create its WAL without the manifest writer.

import "github.com/sievedb/sieve/internal/lockrank"

// initLocks gives the DB's locks their ranks. REQUIRES: before any is used.
func (db *DB) initLocks() {
	db.mu.Init(lockrank.DB)
	db.mu.cond.L = &db.mu.Mutex
	db.versionMu.Init(lockrank.Version)
	db.rsMu.Init(lockrank.ReadState)
}
