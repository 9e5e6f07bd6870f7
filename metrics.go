package sieve

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
)

// dbMetrics are the DB's cumulative counters, updated atomically.
type dbMetrics struct {
	walBytes, walRecords, walSyncs atomic.Int64
	walBackgroundSyncs             atomic.Int64
	commit                         commitCounters

	// reads are the point-lookup counters, in stripes: see readStripe.
	reads                                    [readStripes]readCounters
	prefix                                   [readStripes]prefixCounters
	ingest                                   ingestCounters
	filterUnknown                            atomic.Int64
	filterBuildRetries, filterBuildFallbacks atomic.Int64

	flushes, flushBytes                                                         atomic.Int64
	compactions, compactBytesRead, compactBytesWritten, moves, splitCompactions atomic.Int64
	seekCompactions, seekFlushes, iterRefreshes                                 atomic.Int64
	// compactionsRunning mirrors db.compact.running (stored under db.mu).
	compactionsRunning                              atomic.Int64
	levelBytesIn, levelBytesRead, levelBytesWritten [manifest.NumLevels]atomic.Int64
	stalls, stallNanos                              atomic.Int64
	mergesCollapsed, mergeErrors, slowdowns         atomic.Int64
	expired, filtered                               atomic.Int64
	multiGets, multiGetKeys, cfDrops                atomic.Int64
	// getRestarts counts the Gets whose optimistic pass found its read
	// state retired when it had to read a table (getCF); tests read it.
	getRestarts                                    atomic.Int64
	checkpoints, checkpointLinks, checkpointCopies atomic.Int64
	rangeDel                                       rangeDelCounters
}

// readStripes is how many copies of the point-lookup counters there are.
// A Get adds to a few counters per table it probes; with one copy, Gets on
// different cores would contend for its cache lines on every probe.
const readStripes = 1 << readStripeBits

const readStripeBits = 4

// readCounters is one stripe of the point-lookup counters; Metrics sums
// the stripes. The filter totals are the sums of the levels'.
type readCounters struct {
	gets, tablesProbed                                         atomic.Int64
	level                                                      [manifest.NumLevels]levelFilterCounters
	blocksRead, blockCacheHits, blockFileReads, blockBytesRead atomic.Int64
	indexHits, indexMisses, filterHits, filterMisses, failOpen atomic.Int64
	indexParts, filterParts                                    atomic.Int64
	_                                                          [64]byte // keeps stripes off each other's cache lines
}

// readStripe returns stripe p (percpu.Index) of the read counters: the
// calling processor's, so that Gets running at once on different cores
// add to different lines. (A stripe picked by the key's hash, as before,
// was last written by the other core as often as not.)
func (m *dbMetrics) readStripe(p int) *readCounters {
	return &m.reads[p&(readStripes-1)]
}

// readTotals sums the stripes.
func (m *dbMetrics) readTotals() (gets, probed int64, levels [manifest.NumLevels]FilterMetrics, blocks sstable.ReadStats) {
	for i := range m.reads {
		r := &m.reads[i]
		gets += r.gets.Load()
		probed += r.tablesProbed.Load()
		for l := range levels {
			f := r.level[l].load()
			levels[l].Checks += f.Checks
			levels[l].Negatives += f.Negatives
			levels[l].FalsePositives += f.FalsePositives
			levels[l].TruePositives += f.TruePositives
		}
		blocks.BlocksRead += r.blocksRead.Load()
		blocks.CacheHits += r.blockCacheHits.Load()
		blocks.FileReads += r.blockFileReads.Load()
		blocks.BytesRead += r.blockBytesRead.Load()
	}
	return gets, probed, levels, blocks
}

// levelFilterCounters are the filter probes of one level's tables, by
// outcome: every check ends in exactly one (a probe that fails with an
// error counts in none), so the checks are their sum and a negative probe
// updates one counter.
type levelFilterCounters struct {
	negatives, falsePositives, truePositives atomic.Int64
}

func (c *levelFilterCounters) load() FilterMetrics {
	f := FilterMetrics{Negatives: c.negatives.Load(), FalsePositives: c.falsePositives.Load(), TruePositives: c.truePositives.Load()}
	f.Checks = f.Negatives + f.FalsePositives + f.TruePositives
	return f
}

func (r *readCounters) addReadStats(s *sstable.ReadStats) {
	if s.BlocksRead != 0 {
		r.blocksRead.Add(s.BlocksRead)
		r.blockCacheHits.Add(s.CacheHits)
		r.blockFileReads.Add(s.FileReads)
		r.blockBytesRead.Add(s.BytesRead)
	}
	if s.IndexHits|s.IndexMisses|s.FilterHits|s.FilterMisses|s.FilterFailOpen != 0 {
		addNonZero(&r.indexHits, s.IndexHits)
		addNonZero(&r.indexMisses, s.IndexMisses)
		addNonZero(&r.filterHits, s.FilterHits)
		addNonZero(&r.filterMisses, s.FilterMisses)
		addNonZero(&r.failOpen, s.FilterFailOpen)
		addNonZero(&r.indexParts, s.IndexPartitions)
		addNonZero(&r.filterParts, s.FilterPartitions)
	}
}

func addNonZero(c *atomic.Int64, n int64) {
	if n != 0 {
		c.Add(n)
	}
}

// indexFilterTotals sums the stripes' charged index and filter counters.
func (m *dbMetrics) indexFilterTotals(out *IndexFilterMetrics) {
	for i := range m.reads {
		r := &m.reads[i]
		out.IndexHits += r.indexHits.Load()
		out.IndexMisses += r.indexMisses.Load()
		out.FilterHits += r.filterHits.Load()
		out.FilterMisses += r.filterMisses.Load()
		out.FilterFailOpen += r.failOpen.Load()
		out.IndexPartitions += r.indexParts.Load()
		out.FilterPartitions += r.filterParts.Load()
	}
}

// IndexFilterMetrics describe the tables' index and filter blocks in
// memory (see Options.CacheIndexAndFilterBlocks).
type IndexFilterMetrics struct {
	// ResidentIndexBytes and ResidentFilterBytes are held by open tables
	// outside the block cache's budget (charging off; the same figures as
	// Metrics.IndexResidentBytes and Filter.ResidentBytes).
	ResidentIndexBytes, ResidentFilterBytes int64
	// PinnedIndexBytes and PinnedFilterBytes are pinned by upper-level
	// tables, reserved in the block cache's budget.
	PinnedIndexBytes, PinnedFilterBytes int64
	// CachedIndexBytes and CachedFilterBytes are in the block cache
	// (charged, unpinned), decoded index entries included.
	CachedIndexBytes, CachedFilterBytes int64
	// IndexHits, IndexMisses, FilterHits and FilterMisses count point
	// lookups that found a charged, unpinned table's index or filter
	// block in the block cache or read it from the file; FilterFailOpen
	// the probes that read the data because the filter block could not be
	// read or decoded.
	IndexHits, IndexMisses, FilterHits, FilterMisses, FilterFailOpen int64
	// IndexPartitions and FilterPartitions count the partitions of
	// partitioned indexes and filters (Options.PartitionIndexAndFilters,
	// charged) that point lookups went through, cached or read: over
	// PointLookups.Gets, the partitions loaded per Get. (Each partition
	// access is also an index or filter hit or miss above.)
	IndexPartitions, FilterPartitions int64
	// IndexPartitionsPacked counts the index partitions of the open tables
	// that iterators packed as they cached them (about a third of the
	// stored partition's memory, searched without decoding entries).
	IndexPartitionsPacked int64
}

// LevelMetrics describes one level of the LSM.
type LevelMetrics struct {
	// NumFiles is the number of tables in the level, Size their bytes.
	NumFiles int64
	Size     int64
	// BytesIn is what flushes or compactions wrote into this level;
	// BytesRead and BytesWritten are compaction I/O with this level as
	// the output level.
	BytesIn, BytesRead, BytesWritten int64
	// Score is the level's compaction score (size / target; L0: files /
	// trigger).
	Score float64
	// Filter counts the filter probes of this level's tables by point
	// lookups (cumulative, over every column family; UnknownType,
	// ResidentBytes and the build counters stay in Metrics.Filter).
	Filter FilterMetrics
	// FilterBytes is the filter memory of the level's open tables and
	// FilterBitsPerKey its bits per filtered key (8·FilterBytes over the
	// keys those tables' filters hold).
	FilterBytes      int64
	FilterBitsPerKey float64
	// FilterExpectedFPR is the false-positive rate the level's open
	// tables' filters are expected to show from their geometry, averaged
	// over their keys (0 when unknown: no table, or partitioned filters);
	// compare with Filter.FalsePositiveRate(). FilterPolicy is the filter
	// policy's name (filter.Policy.Name) of the tables holding most of the
	// level's keys ("" without filters).
	FilterExpectedFPR float64
	FilterPolicy      string
}

// FilterMetrics count table-filter probes made by point lookups.
type FilterMetrics struct {
	// Checks is the number of table filters probed that gave an answer
	// (Negatives + FalsePositives + TruePositives; a probe or search that
	// failed with an error is in none).
	Checks int64
	// Negatives is how many probes ruled a table out: data-block reads
	// the filter saved.
	Negatives int64
	// FalsePositives is how many probes passed for a key the table did
	// not hold.
	FalsePositives int64
	// TruePositives is how many probes passed for a key the table held.
	TruePositives int64
	// UnknownType counts tables opened whose filter type this build does
	// not know; they are read without a filter.
	UnknownType int64
	// ResidentBytes is the memory held by open tables' filter blocks.
	ResidentBytes int64
	// BuildRetries counts filter constructions (binary fuse, Ribbon)
	// retried with another seed; BuildFallbacks those that gave up and
	// wrote a blocked Bloom filter instead. A flush never fails for it.
	BuildRetries, BuildFallbacks int64
}

// FalsePositiveRate is FalsePositives / (FalsePositives + Negatives): the
// measured FPR over probes for absent keys.
func (f FilterMetrics) FalsePositiveRate() float64 {
	if f.FalsePositives+f.Negatives == 0 {
		return 0
	}
	return float64(f.FalsePositives) / float64(f.FalsePositives+f.Negatives)
}

// Metrics is a snapshot of the database's counters and shape.
type Metrics struct {
	// WALRecovery says what Open's WAL replay dropped under
	// Options.WALRecovery (empty when nothing was).
	WALRecovery WALRecoveryReport
	// Levels describes L0 to L6.
	Levels [manifest.NumLevels]LevelMetrics
	// Filter counts the table-filter probes of point lookups, over every
	// level and column family.
	Filter FilterMetrics
	// BlockCache is the shared data-block cache.
	BlockCache struct {
		// Hits and Misses count lookups; Size is the bytes of the Count
		// blocks held, Capacity the configured budget.
		Hits, Misses, Size, Count, Capacity int64
		// Reserved is the part of Capacity taken by pinned index and
		// filter blocks; Size+Reserved stays within Capacity.
		Reserved int64
		// NotAdmitted counts data blocks read on a miss that the cache
		// did not keep: a full shard caches a block only at its second
		// miss within a window (a doorkeeper), so blocks read once do not
		// evict blocks read twice.
		NotAdmitted int64
	}
	// IndexFilter is the memory and cache traffic of index and filter
	// blocks.
	IndexFilter IndexFilterMetrics
	// PointLookups counts Get calls and the work they did in tables.
	PointLookups struct {
		// Gets is the number of Get calls that reached the tables.
		Gets int64
		// TablesProbed counts tables considered (filter probed or, for
		// tables without filter, searched).
		TablesProbed int64
		// DataBlocksRead counts data blocks accessed, split into
		// BlockCacheHits and FileReads.
		DataBlocksRead, BlockCacheHits, FileReads, BytesRead int64
		// MultiGets counts MultiGet calls and MultiGetKeys the keys they
		// asked for (their table work is in the counters above).
		MultiGets, MultiGetKeys int64
	}
	// WAL counts the bytes and records written to the write-ahead logs and
	// their fsyncs.
	WAL struct {
		Bytes, Records, Syncs int64
		// BackgroundSyncs counts the fsyncs of unsynced (NoSync) records
		// started once a WAL held 1 MiB of them; Syncs does not count
		// them.
		BackgroundSyncs int64
	}
	// MemTable describes the memtables.
	MemTable struct {
		// Size is the bytes in the mutable memtable: of every column
		// family in DB.Metrics, of the family in ColumnFamily.Metrics.
		// Immutable counts full memtables (of every family) waiting for a
		// flush.
		Size      int64
		Immutable int64
		// MergesCollapsed counts merge operands that a write replaced by
		// the value they resolve to, because the key already had
		// MaxSuccessiveMerges operands in the memtable.
		MergesCollapsed int64
	}
	// Flush counts memtable flushes and the table bytes they wrote.
	Flush struct {
		Count, Bytes int64
		// SeekTriggered counts the memtable rotations that iterator
		// seeks asked for (see Options.DisableSeekCompactions): a large
		// memtable that read-mostly scans kept merging.
		SeekTriggered int64
	}
	// Compaction counts the compactions that rewrote tables (Count), the
	// moves (a table changing level without being rewritten), and their
	// I/O.
	Compaction struct {
		Count, Moves, BytesRead, BytesWritten int64
		// Split counts compactions that ran as subcompactions (see
		// Options.MaxSubcompactions).
		Split int64
		// SeekTriggered counts L0 compactions that iterator seeks asked
		// for (see Options.DisableSeekCompactions), before L0 reached its
		// trigger.
		SeekTriggered int64
		// MergeErrors counts keys whose operands compaction copied
		// through because the merger failed on them.
		MergeErrors int64
		// Expired counts values flushes and compactions removed because
		// their deadline had come (PutWithExpiry); Filtered those a
		// CompactionFilter removed.
		Expired, Filtered int64
		// Running is the number of compactions in progress now,
		// background and manual (with MemTable.Immutable, queued
		// flushes: whether the database is busy in the background).
		Running int64
	}
	// WriteAmp is (flush bytes + compaction bytes written) / WAL bytes.
	WriteAmp float64
	// ReadAmp is the number of tables a point lookup may have to probe
	// now: every L0 table plus one per non-empty deeper level.
	ReadAmp int64
	// Stall counts the writes that waited for a flush or compaction
	// (Count, for Duration in all) and the writes slowed down by 1 ms
	// because L0 held L0SlowdownWritesTrigger tables or more (Slowdowns).
	Stall struct {
		Count     int64
		Duration  time.Duration
		Slowdowns int64
	}
	// RangeDel counts range deletions: written by DeleteRange (and batch
	// DeleteRange entries), and what compactions dropped because of them.
	RangeDel RangeDelMetrics
	// IndexResidentBytes is the memory held by open tables' index blocks
	// outside the block cache.
	IndexResidentBytes int64
	// PrefixSeeks counts Iterator.SeekPrefixGE calls and their prefix
	// filter probes (not in Filter, which counts point lookups').
	PrefixSeeks PrefixMetrics
	// Ingest counts DB.Ingest calls and the tables they added.
	Ingest IngestMetrics
	// Commit counts the commit pipeline's groups and their fsyncs.
	Commit CommitMetrics
	// Checkpoints counts the checkpoints written and the tables they
	// hard-linked or (where the file system cannot link) copied;
	// ColumnFamilyDrops the column families dropped.
	Checkpoints struct {
		Count, TablesLinked, TablesCopied int64
	}
	ColumnFamilyDrops int64
	// IteratorRefreshes counts the seeks that moved a long-lived iterator
	// onto the current memtables and tables because it pinned an older
	// state and nothing had been written since its view (see Iterator).
	IteratorRefreshes int64
}

// Metrics returns a snapshot of the database's metrics (of the default
// column family's levels; see ColumnFamily.Metrics for others).
func (db *DB) Metrics() *Metrics {
	m := db.metricsFor(0)
	if rs := db.loadReadState(); rs != nil {
		m.MemTable.Size = rs.mem.size()
		rs.unref()
	}
	return m
}

func (db *DB) metricsFor(cf uint32) *Metrics {
	m := &db.metrics
	out := &Metrics{WALRecovery: db.walRecovery}
	gets, probed, levels, blocks := m.readTotals()
	out.Filter = FilterMetrics{
		UnknownType:  m.filterUnknown.Load(),
		BuildRetries: m.filterBuildRetries.Load(), BuildFallbacks: m.filterBuildFallbacks.Load(),
	}
	for level, f := range levels {
		out.Levels[level].Filter = f
		out.Filter.Checks += f.Checks
		out.Filter.Negatives += f.Negatives
		out.Filter.FalsePositives += f.FalsePositives
		out.Filter.TruePositives += f.TruePositives
	}
	if c := db.tables.cache; c != nil {
		out.BlockCache.Hits, out.BlockCache.Misses = c.Hits(), c.Misses()
		out.BlockCache.Size, out.BlockCache.Count, out.BlockCache.Capacity = c.Size(), c.Count(), c.Capacity()
		out.BlockCache.Reserved = c.Reserved()
		out.BlockCache.NotAdmitted = c.NotAdmitted()
		out.IndexFilter.CachedIndexBytes = c.KindSize(cache.KindIndex)
		out.IndexFilter.CachedFilterBytes = c.KindSize(cache.KindFilter)
	}
	m.indexFilterTotals(&out.IndexFilter)
	out.PointLookups.Gets, out.PointLookups.TablesProbed = gets, probed
	out.PointLookups.DataBlocksRead, out.PointLookups.BlockCacheHits = blocks.BlocksRead, blocks.CacheHits
	out.PointLookups.FileReads, out.PointLookups.BytesRead = blocks.FileReads, blocks.BytesRead
	out.PointLookups.MultiGets, out.PointLookups.MultiGetKeys = m.multiGets.Load(), m.multiGetKeys.Load()
	m.writeTotals(out)
	out.IteratorRefreshes = m.iterRefreshes.Load()
	if out.WAL.Bytes > 0 {
		out.WriteAmp = float64(out.Flush.Bytes+out.Compaction.BytesWritten) / float64(out.WAL.Bytes)
	}
	m.featureTotals(out)
	if db.closed.Load() {
		return out
	}
	rs := db.loadReadState()
	defer rs.unref()
	if t := rs.mem.table(cf); t != nil {
		out.MemTable.Size = t.ApproximateSize()
	}
	out.MemTable.Immutable = int64(len(rs.imm))
	if lv := rs.version.Levels(cf); lv != nil {
		db.levelShapes(out, lv)
	}
	tm := db.tables.memory()
	out.IndexResidentBytes, out.Filter.ResidentBytes = tm.residentIndex, tm.residentFilter
	f := &out.IndexFilter
	f.ResidentIndexBytes, f.ResidentFilterBytes = tm.residentIndex, tm.residentFilter
	f.PinnedIndexBytes, f.PinnedFilterBytes = tm.pinnedIndex, tm.pinnedFilter
	f.IndexPartitionsPacked = tm.indexPacks
	return out
}

// writeTotals fills in the WAL's, flushes' and compactions' counters.
func (m *dbMetrics) writeTotals(out *Metrics) {
	out.WAL.Bytes, out.WAL.Records, out.WAL.Syncs = m.walBytes.Load(), m.walRecords.Load(), m.walSyncs.Load()
	out.WAL.BackgroundSyncs = m.walBackgroundSyncs.Load()
	out.Flush.Count, out.Flush.Bytes = m.flushes.Load(), m.flushBytes.Load()
	out.Flush.SeekTriggered = m.seekFlushes.Load()
	out.Compaction.Count, out.Compaction.Moves = m.compactions.Load(), m.moves.Load()
	out.Compaction.Split = m.splitCompactions.Load()
	out.Compaction.SeekTriggered = m.seekCompactions.Load()
	out.Compaction.BytesRead, out.Compaction.BytesWritten = m.compactBytesRead.Load(), m.compactBytesWritten.Load()
	out.Compaction.MergeErrors = m.mergeErrors.Load()
	out.Compaction.Expired, out.Compaction.Filtered = m.expired.Load(), m.filtered.Load()
	out.Compaction.Running = m.compactionsRunning.Load()
}

// levelShapes fills in the shape of a column family's levels: tables,
// bytes, scores, filters, and the read amplification.
func (db *DB) levelShapes(out *Metrics, lv *manifest.Levels) {
	m := &db.metrics
	targets := db.scoreTargets(lv)
	for level := range lv {
		lm := &out.Levels[level]
		lm.NumFiles = int64(lv.NumFiles(level))
		lm.Size = int64(lv.Size(level))
		lm.BytesIn = m.levelBytesIn[level].Load()
		lm.BytesRead = m.levelBytesRead[level].Load()
		lm.BytesWritten = m.levelBytesWritten[level].Load()
		lm.Score = targets[level]
		fs := db.tables.filterStats(lv[level])
		lm.FilterBytes, lm.FilterPolicy = fs.bytes, fs.policy
		if fs.keys > 0 {
			lm.FilterBitsPerKey = float64(8*lm.FilterBytes) / float64(fs.keys)
		}
		if fs.expectedKeys > 0 {
			lm.FilterExpectedFPR = fs.expectedSum / float64(fs.expectedKeys)
		}
		if level == 0 {
			out.ReadAmp += lm.NumFiles
		} else if lm.NumFiles > 0 {
			out.ReadAmp++
		}
	}
}

// featureTotals fills in the stalls and the counters of the features
// beyond reads, writes, flushes and compactions.
func (m *dbMetrics) featureTotals(out *Metrics) {
	out.Stall.Count, out.Stall.Duration = m.stalls.Load(), time.Duration(m.stallNanos.Load())
	out.Stall.Slowdowns = m.slowdowns.Load()
	out.RangeDel = m.rangeDel.load()
	out.MemTable.MergesCollapsed = m.mergesCollapsed.Load()
	out.PrefixSeeks = m.prefixTotals()
	out.Ingest = m.ingest.load()
	out.Commit = m.commitTotals()
	out.Checkpoints.Count, out.Checkpoints.TablesLinked = m.checkpoints.Load(), m.checkpointLinks.Load()
	out.Checkpoints.TablesCopied, out.ColumnFamilyDrops = m.checkpointCopies.Load(), m.cfDrops.Load()
}

// scoreTargets returns the compaction scores of a column family's levels
// as the picker computes them (dynamic level sizing).
func (db *DB) scoreTargets(lv *manifest.Levels) [manifest.NumLevels]float64 {
	return db.pickerForScores().Scores(lv)
}

// pickerForScores is a picker with the DB's options, for scores and
// targets.
func (db *DB) pickerForScores() *compaction.Picker {
	return compaction.NewPicker(compaction.PickerOptions{
		L0CompactionTrigger: db.opts.L0CompactionTrigger,
		LBaseMaxBytes:       db.opts.LBaseMaxBytes,
		LevelMultiplier:     db.opts.LevelMultiplier,
		TargetFileSize:      db.opts.TargetFileSize,
	})
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	f, suffix := float64(n), []string{"KiB", "MiB", "GiB", "TiB"}
	i := -1
	for f >= unit && i < len(suffix)-1 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f%s", f, suffix[i])
}

// String renders the metrics as a table, in the spirit of Pebble's.
func (m *Metrics) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "level | tables |     size |  score |   bytes-in |  bytes-read | bytes-written | filter |  bits/key |  checks |     FPR |  neg |   FP |   TP\n")
	fmt.Fprintf(&sb, "------+--------+----------+--------+------------+-------------+---------------+--------+-----------+---------+---------+------+------+------\n")
	var files, size int64
	for level, l := range m.Levels {
		files += l.NumFiles
		size += l.Size
		if l.NumFiles == 0 && l.BytesIn == 0 && l.Filter.Checks == 0 {
			continue
		}
		lf := l.Filter
		fmt.Fprintf(&sb, "   L%d | %6d | %8s | %6.2f | %10s | %11s | %13s | %6s | %9.2f | %7d | %6.3f%% | %4d | %4d | %4d\n", level, l.NumFiles, humanBytes(l.Size),
			l.Score, humanBytes(l.BytesIn), humanBytes(l.BytesRead), humanBytes(l.BytesWritten),
			humanBytes(l.FilterBytes), l.FilterBitsPerKey, lf.Checks, 100*lf.FalsePositiveRate(), lf.Negatives, lf.FalsePositives, lf.TruePositives)
	}
	fmt.Fprintf(&sb, "total | %6d | %8s | read-amp %d, write-amp %.2f\n", files, humanBytes(size), m.ReadAmp, m.WriteAmp)
	fmt.Fprintf(&sb, "WAL: %s in %d records, %d syncs (%d background); memtable %s, %d immutable, %d merges collapsed; flushes %d (%s, %d seek-triggered); compactions %d (%d moves, %d split, %d seek-triggered, read %s, wrote %s)\n",
		humanBytes(m.WAL.Bytes), m.WAL.Records, m.WAL.Syncs, m.WAL.BackgroundSyncs, humanBytes(m.MemTable.Size), m.MemTable.Immutable, m.MemTable.MergesCollapsed,
		m.Flush.Count, humanBytes(m.Flush.Bytes), m.Flush.SeekTriggered, m.Compaction.Count, m.Compaction.Moves, m.Compaction.Split, m.Compaction.SeekTriggered,
		humanBytes(m.Compaction.BytesRead), humanBytes(m.Compaction.BytesWritten))
	f := m.Filter
	fmt.Fprintf(&sb, "filter: %d checks, %d negatives, %d false positives (FPR %.3f%%), %d true positives, %d unknown-type tables; resident %s; %d build retries, %d fallbacks\n",
		f.Checks, f.Negatives, f.FalsePositives, 100*f.FalsePositiveRate(), f.TruePositives, f.UnknownType, humanBytes(f.ResidentBytes),
		f.BuildRetries, f.BuildFallbacks)
	p := m.PointLookups
	fmt.Fprintf(&sb, "point lookups: %d tables probed, %d data blocks (%d cache hits, %d file reads, %s); multiget %d calls, %d keys\n",
		p.TablesProbed, p.DataBlocksRead, p.BlockCacheHits, p.FileReads, humanBytes(p.BytesRead), p.MultiGets, p.MultiGetKeys)
	c := m.BlockCache
	hitRate := 0.0
	if c.Hits+c.Misses > 0 {
		hitRate = 100 * float64(c.Hits) / float64(c.Hits+c.Misses)
	}
	fmt.Fprintf(&sb, "block cache: %s of %s, %d blocks, %d hits, %d misses (%.1f%% hit rate; %d not admitted); index resident %s\n",
		humanBytes(c.Size), humanBytes(c.Capacity), c.Count, c.Hits, c.Misses, hitRate, c.NotAdmitted, humanBytes(m.IndexResidentBytes))
	x := m.IndexFilter
	fmt.Fprintf(&sb, "index/filter: resident %s/%s, pinned %s/%s (cache reserved %s), cached %s/%s; index %d hits %d misses, filter %d hits %d misses, %d fail-open\n",
		humanBytes(x.ResidentIndexBytes), humanBytes(x.ResidentFilterBytes), humanBytes(x.PinnedIndexBytes), humanBytes(x.PinnedFilterBytes),
		humanBytes(c.Reserved), humanBytes(x.CachedIndexBytes), humanBytes(x.CachedFilterBytes),
		x.IndexHits, x.IndexMisses, x.FilterHits, x.FilterMisses, x.FilterFailOpen)
	if x.IndexPartitions+x.FilterPartitions+x.IndexPartitionsPacked > 0 {
		perGet := func(n int64) float64 { return float64(n) / float64(max(p.Gets, 1)) }
		fmt.Fprintf(&sb, "partitions: index %d (%.2f per lookup), filter %d (%.2f per lookup); %d index partitions packed by iterators\n",
			x.IndexPartitions, perGet(x.IndexPartitions), x.FilterPartitions, perGet(x.FilterPartitions), x.IndexPartitionsPacked)
	}
	fmt.Fprintf(&sb, "stalls: %d, %s; slowdowns: %d\n", m.Stall.Count, m.Stall.Duration.Round(time.Millisecond), m.Stall.Slowdowns)
	fmt.Fprintf(&sb, "%s\n", m.PrefixSeeks)
	fmt.Fprintf(&sb, "%s\n", m.Ingest)
	fmt.Fprintf(&sb, "%s\n", m.Commit)
	fmt.Fprintf(&sb, "checkpoints: %d (%d tables linked, %d copied); column families dropped: %d\n",
		m.Checkpoints.Count, m.Checkpoints.TablesLinked, m.Checkpoints.TablesCopied, m.ColumnFamilyDrops)
	r := m.RangeDel
	fmt.Fprintf(&sb, "range deletes: %d written; compaction dropped %d covered entries, %d tombstones, %d whole tables\n",
		r.Written, r.KeysDropped, r.TombstonesDropped, r.TablesDropped)
	return sb.String()
}
