package sieve

import (
	"bytes"
	"math/rand/v2"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/manifest"
)

// Seek-triggered compaction (LevelDB's seek compaction, applied to
// iterators; Pebble's read-triggered compactions answer the same need).
// An L0 table that overlaps the rest of the LSM makes every seek in its
// range position one more source: a data-block load and a merging-heap
// child per seek, for as long as it stays in L0. Writes compact L0 only
// once L0CompactionTrigger tables accumulate, so a read-mostly database
// can keep a few whole-key-range L0 tables for good: YCSB E's short scans
// cost 28.2 µs of CPU on the shape workloads A–D leave (a memtable, two
// L0 tables, L6) and 13.2 µs on L6 alone.
//
// Each seek of a DB iterator charges the L0 tables whose key range holds
// the key when another source (a memtable, another table, a lower level)
// may too. A table that has been charged seekBudget times (LevelDB's
// allowance: one seek per 16 KiB of table, at least 100) asks for a
// compaction — if the reads it was charged outnumber the writes since it
// was written readMostlyRatio to one; otherwise it asks again at the next
// multiple of its budget — and the next scheduling with nothing else to
// do compacts L0 into the base level as the L0 trigger would.
// Metrics.Compaction.SeekTriggered counts them.
//
// Gets charge too, at a weight (chargeGetSeek): a read-mostly database
// whose reads are Gets otherwise keeps its L0 tables as well, and every
// Get keeps paying them a filter probe and a table-cache lookup each (in
// YCSB C on the shape A and B leave, a Get costs 2.85 µs of CPU after
// the compaction, 3.6 µs before).

// seekBudget is the number of charged seeks after which table f asks for
// a compaction.
func seekBudget(f *manifest.FileMetadata) int64 {
	return max(100, int64(f.Size/(16<<10)))
}

// chargeSeek charges the L0 tables of the iterator's column family that
// hold key, when they are not the only source there.
func (it *Iterator) chargeSeek(key []byte) {
	if it.rs == nil || it.db.opts.ReadOnly || it.db.opts.DisableSeekCompactions {
		return
	}
	lv := it.rs.version.Levels(it.cf)
	if g := it.rs.mem; g != nil && !g.flushAsked.Load() && g.merges(it.cf) && (len(it.rs.imm) > 0 || (lv != nil && (len(lv[0]) > 0 || tablesBelowL0(lv)))) {
		it.db.chargeMem(g)
	}
	if lv == nil || len(lv[0]) == 0 {
		return
	}
	holds := func(f *manifest.FileMetadata) bool {
		return bytes.Compare(key, f.Smallest.UserKey) >= 0 && bytes.Compare(key, f.Largest.UserKey) <= 0
	}
	n := 0
	for _, f := range lv[0] {
		if holds(f) {
			n++
		}
	}
	if n == 0 || (n == 1 && !it.otherSources(lv)) {
		return
	}
	for _, f := range lv[0] {
		if holds(f) {
			it.db.chargeL0(f)
		}
	}
}

// readMostlyRatio is how many reads (a seek, or getSeekWeight Gets, per
// charge) an L0 table must have been charged per write since it was
// written before its budget asks for a compaction. Under a mix of reads
// and writes the L0 trigger compacts the table soon anyway, and a seek
// compaction only rewrites the base level once more: a Get reader beside
// a loading writer charges about 1.5 reads per write, and without this
// check set off four seek compactions of L6 in a few seconds (tripling
// its p99). In peers ycsb, the reads of B and C charge the L0 table A
// left 3 reads per write since it was written by the end of C.
const readMostlyRatio = 3

// chargeL0 charges L0 table f one seek and asks for a seek compaction at
// each multiple of its budget once the database is read-mostly since f was
// written.
func (db *DB) chargeL0(f *manifest.FileMetadata) {
	n := f.Seeks.Add(1)
	if n%seekBudget(f) != 0 {
		return
	}
	seq := db.visibleSeq.Load()
	if uint64(n)*getSeekWeight >= readMostlyRatio*(seq-min(f.LargestSeq, seq)) {
		db.requestSeekCompaction()
	}
}

// getSeekWeight is how many Gets that consulted an L0 table in vain make
// one charged seek: a Get pays such a table a filter probe (tens of
// nanoseconds; its data block only on a false positive), where an
// iterator seek pays it a data block and a merging-heap source (a few
// microseconds). LevelDB charges a Get that read more than one table
// as a full seek; with filters in every table that would compact L0 for
// a cost the Gets hardly pay. A power of two: one Get in getSeekWeight,
// chosen at random, is charged (which also keeps concurrent Gets off
// the table's counter).
const getSeekWeight = 64

// chargeGetSeek charges L0 table f for a Get that consulted it and had to
// consult another table (LevelDB's Version::UpdateStats, weighted by
// getSeekWeight): a read-mostly database whose reads are Gets gets its L0
// compacted too.
//
// With lv non-nil the Get goes on below L0, and f is charged only if a
// level there holds a table (checked after the sampling, off the path of
// the 63 Gets in 64 that charge nothing).
func (db *DB) chargeGetSeek(f *manifest.FileMetadata, lv *manifest.Levels) {
	if rand.Uint32()&(getSeekWeight-1) != 0 || db.opts.ReadOnly || db.opts.DisableSeekCompactions {
		return
	}
	if lv != nil && !tablesBelowL0(lv) {
		return
	}
	db.chargeL0(f)
}

// chargeGetSeeks is chargeGetSeek for n keys of a MultiGet (that go on to
// another table).
func (db *DB) chargeGetSeeks(f *manifest.FileMetadata, n int) {
	for range n {
		db.chargeGetSeek(f, nil)
	}
}

// otherSources reports whether the iterator reads anything besides L0:
// a memtable with entries or a table below L0.
func (it *Iterator) otherSources(lv *manifest.Levels) bool {
	return it.rs.mem != nil && !it.rs.mem.empty() || len(it.rs.imm) > 0 || tablesBelowL0(lv)
}

// tablesBelowL0 reports whether a level below L0 holds a table.
func tablesBelowL0(lv *manifest.Levels) bool {
	for l := 1; l < manifest.NumLevels; l++ {
		if len(lv[l]) > 0 {
			return true
		}
	}
	return false
}

// requestSeekCompaction records that a table asked for a seek compaction
// and schedules one (a seek takes db.mu here once per table's budget; it
// holds no other lock).
func (db *DB) requestSeekCompaction() {
	if db.compact.seekWanted.Swap(true) {
		return
	}
	db.mu.Lock()
	db.maybeScheduleCompactionLocked()
	db.mu.Unlock()
}

// pickSeekCompactionLocked picks the L0 compaction a seek asked for, in
// the first column family that has L0 tables, once nothing else needs
// compacting; the request is dropped when there is none to pick.
// REQUIRES: db.mu held.
func (db *DB) pickSeekCompactionLocked(v *manifest.Version) (*compaction.Compaction, uint32) {
	if !db.compact.seekWanted.Load() {
		return nil, 0
	}
	for id, lv := range v.CFs {
		if !db.compactable(id) || len(lv[0]) == 0 {
			continue
		}
		if c := db.pickerLocked(id).PickL0(lv); c != nil {
			db.compact.seekWanted.Store(false)
			db.metrics.seekCompactions.Add(1)
			return c, id
		}
	}
	if db.compact.running == 0 {
		db.compact.seekWanted.Store(false)
	}
	return nil, 0
}

// Seek-triggered flush. A large mutable memtable is one more source for
// every seek, and an expensive one: its B-tree and its arena are larger
// than the CPU caches, so a seek descends through memory and every entry
// it yields reads its value from the arena. Writes rotate it only once it
// is full, so a database whose writes slow down or stop keeps merging it
// into every scan. YCSB E on what A–D leave (a 28.5 MiB memtable beside
// L6): 1.71× goleveldb's scans/s with the memtable, 2.01× with it and L0
// compacted away (bench/peers ycsb -compact-before=E).
//
// Each seek of a DB iterator that merges the mutable group beside another
// source charges the group. Every memSeekWindow charges, the writes since
// the window began (the visible sequence number's advance) are compared
// with the window: when the seeks outnumber them readMostlyRatio to one
// and the group holds at least a quarter of MemTableSize, the group is
// rotated (as a full one would be) and flushed; seek-triggered compaction
// then takes the L0 table down. Metrics.Flush.SeekTriggered counts them.

// memSeekWindow is the number of charged seeks over which the writes are
// counted.
const memSeekWindow = 1024

// chargeMem charges the mutable group g one seek and, at the end of each
// window, asks for its rotation if the window was read-mostly.
//
// The first window starts at the group's first charge: a read-mostly
// phase that begins on a full memtable (YCSB E after A-D) rotates it after
// memSeekWindow seeks, not twice that many, each merging the whole
// memtable. Should a racing charge end the first window before that
// charge stored its start, the window compares every write the database
// has made with its seeks (a start of 0), which in all but a nearly empty
// database is not read-mostly: that window rotates nothing.
func (db *DB) chargeMem(g *memGroup) {
	n := g.seeks.Add(1)
	if n == 1 {
		g.windowSeq.Store(db.visibleSeq.Load())
		return
	}
	if n%memSeekWindow != 0 {
		return
	}
	seq := db.visibleSeq.Load()
	start := g.windowSeq.Swap(seq)
	if start > seq {
		return
	}
	if (seq-start)*readMostlyRatio > memSeekWindow || g.size() < db.opts.MemTableSize/4 {
		return
	}
	if !g.flushAsked.Swap(true) {
		db.requestSeekFlush(g)
	}
}

// requestSeekFlush rotates group g, if it is still the mutable one, on a
// new goroutine: the rotation takes the commit pipeline, which a seek must
// not wait for.
func (db *DB) requestSeekFlush(g *memGroup) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed.Load() || db.mu.bgErr != nil || db.mu.mem != g {
		return
	}
	db.seekFlushWG.Add(1)
	go func() {
		defer db.seekFlushWG.Done()
		db.commit.acquire()
		defer db.commit.release()
		db.mu.Lock()
		defer db.mu.Unlock()
		if db.closed.Load() || db.mu.bgErr != nil || db.mu.mem != g || g.empty() {
			return
		}
		if db.rotateMemLocked() == nil {
			db.metrics.seekFlushes.Add(1)
		}
	}()
}
