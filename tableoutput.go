package sieve

import (
	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/rangedel"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
	"math"
	"strconv"
)

// tableOutput writes the tables of a flush (one, writeTable) or of a
// compaction (as many as its Splitter cuts, one tableOutput per
// subcompaction): start creates the next table, finish completes, syncs
// and closes it and records its metadata, abandon removes every table it
// created. The caller syncs the directory before a manifest edit names
// the tables.
type tableOutput struct {
	db    *DB
	cf    uint32
	level int                    // the level the tables are written into
	c     *compaction.Compaction // nil for a flush
	flush bool                   // a flush's output
	num   uint64
	f     vfs.File
	w     *sstable.Writer
	metas []*manifest.FileMetadata
	files []uint64 // every table created, for cleanup

	// rd are the range tombstones the tables hold (nil: none) within
	// [rdLower, rdUpper) (nil = open; a subcompaction's range): each table
	// takes the part of them from rdLower to the successor of its last
	// user key, where the next one's part begins, and the last table the
	// rest, so that the tables' key ranges (which cover their tombstones,
	// sstable.TableBounds) never share a user key.
	rd       *rangedel.List
	rdLower  []byte
	rdUpper  []byte
	lastUkey []byte
	curRD    bool // the current table has range tombstones
	// skip are the input tables a range tombstone of the compaction
	// covers whole (coveredInputs): they are not read.
	skip map[uint64]bool
}

// opener wraps a compaction's table opener so that the tables in skip
// read as empty without being opened.
func (o *tableOutput) opener(open compaction.TableOpener) compaction.TableOpener {
	if len(o.skip) == 0 {
		return open
	}
	return func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		if o.skip[f.FileNum] {
			return emptyIter{}, nil
		}
		return open(f)
	}
}

// add adds an entry to the current table.
func (o *tableOutput) add(k base.InternalKey, v []byte) error {
	o.lastUkey = append(o.lastUkey[:0], k.UserKey...)
	return o.w.Add(k, v)
}

// setRangeDels gives the current table its share of the range tombstones;
// last says whether it is the output's last table.
func (o *tableOutput) setRangeDels(last bool) error {
	if o.rd == nil {
		return nil
	}
	upper := o.rdUpper
	if !last {
		upper = append(o.lastUkey[:len(o.lastUkey):len(o.lastUkey)], 0)
	}
	frags := o.rd.Clip(o.rdLower, upper)
	o.rdLower = upper
	o.curRD = len(frags) > 0
	if len(frags) == 0 {
		return nil
	}
	return o.w.SetRangeDels(frags)
}

// start creates the next table and its writer.
func (o *tableOutput) start() error {
	db := o.db
	o.num = db.versions.NextFileNum()
	f, err := db.fs.Create(base.MakeFilename(db.dirname, base.FileTypeTable, o.num))
	if err != nil {
		return err
	}
	o.files = append(o.files, o.num)
	o.f = f
	wo := db.writerOptions(o.cf, o.level, o.c)
	// Flushes and compactions use the faster encoder: on a compaction of
	// 1M fillrandom keys it took 14-22% off compactRange's CPU for tables
	// 0.3% smaller (BenchmarkFillRandomCompact; 0.75% larger on
	// bench/peers' values), and compactions are what a write-heavy
	// phase, and a scan-triggered compaction, wait for. Ingested tables
	// keep the denser one.
	wo.FastCompression = o.flush || o.c != nil
	o.w = sstable.NewWriter(f, wo)
	return nil
}

// finish completes, syncs and closes the current table; last says whether
// it is the output's last table.
func (o *tableOutput) finish(last bool) error {
	o.curRD = false
	err := o.setRangeDels(last)
	var md *sstable.WriterMetadata
	if err == nil {
		md, err = o.w.Finish()
	}
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	o.w, o.f = nil, nil
	if err != nil {
		return err
	}
	o.db.noteMetaShare(md)
	meta := &manifest.FileMetadata{
		FileNum: o.num, Size: md.Size,
		Smallest: md.Smallest.Clone(), Largest: md.Largest.Clone(),
		SmallestSeq: md.SmallestSeq, LargestSeq: md.LargestSeq,
	}
	meta.RangeDels.Store(manifest.RangeDelsNone)
	if o.curRD {
		meta.RangeDels.Store(manifest.RangeDelsSome)
	}
	o.metas = append(o.metas, meta)
	return nil
}

// abandon removes every table the output created.
func (o *tableOutput) abandon() {
	if o.f != nil {
		o.f.Close()
	}
	o.db.removeFiles(o.files)
}

// backgroundYieldBlocks is how often a compaction yields its P
// (sstable.WriterOptions.YieldEvery): every 4 data blocks, 12 KiB of
// output, a few tens of microseconds of merging and encoding: a reader
// beside a flat-out writer on 2 cores keeps a far lower p99 Get latency
// with it, and the writer loses nothing (doc/performance.md's ledger has
// the figures; BenchmarkGetWithWriter measures them). Yields every block
// or every 16 blocks measured the same within the noise.
//
// Only compactions yield (c != nil in writerOptions); flushes and the
// rewrite of an ingested table (also c == nil; it runs in the caller's
// goroutine) do not. A flush is on the writers' path: while
// MaxImmutableMemTables memtables wait for it, writes stall, and a flush
// that gave its turn away every 12 KiB fell behind a flat-out writer and
// a compaction on 2 cores: lsmbench's 10M-key fill stalled with flushes
// yielding and not without, while the reader of BenchmarkGetWithWriter
// kept its p99 either way.
const backgroundYieldBlocks = 4

// writerOptions are the table writer's options for a table of column
// family cf written into level by c (nil for a flush).
func (db *DB) writerOptions(cf uint32, level int, c *compaction.Compaction) sstable.WriterOptions {
	o := sstable.WriterOptions{
		BlockSize:            db.opts.BlockSize,
		BlockRestartInterval: db.opts.BlockRestartInterval,
		Compression:          db.opts.Compression,
		ColumnFamily:         strconv.FormatUint(uint64(cf), 10),
	}
	if c != nil {
		o.YieldEvery = backgroundYieldBlocks
	}
	if db.opts.PartitionIndexAndFilters || db.metadataOverBudget() {
		o.PartitionSize = db.opts.MetadataBlockSize
	}
	if p := db.filterPolicyFor(cf, level, c); p != nil {
		o.FilterPolicy = p
	}
	db.setPrefixOptions(cf, &o)
	return o
}

// metadataOverBudget reports whether Options.PartitionAbove asks for
// partitioned tables now: the live tables' index and filter bytes,
// estimated, exceed it.
func (db *DB) metadataOverBudget() bool {
	if db.opts.PartitionAbove <= 0 || !db.opts.CacheIndexAndFilterBlocks {
		return false
	}
	est := float64(db.liveTableBytes()) * db.metadataShare()
	return est > float64(db.opts.PartitionAbove)
}

// liveTableBytes is the size of every table of the current version, all
// column families (0 once Close has released it).
func (db *DB) liveTableBytes() int64 {
	rs := db.loadReadState()
	if rs == nil {
		return 0
	}
	defer rs.unref()
	var n uint64
	for _, lv := range rs.version.CFs {
		for level := range lv {
			n += lv.Size(level)
		}
	}
	return int64(n)
}

// metadataShare is the last table's index and filter bytes per byte.
func (db *DB) metadataShare() float64 { return math.Float64frombits(db.metaShare.Load()) }

// noteMetaShare records the index and filter bytes per byte of a table
// just written, for metadataOverBudget.
func (db *DB) noteMetaShare(md *sstable.WriterMetadata) {
	if md.Size > 0 {
		share := float64(md.Props.IndexSize+md.Props.FilterSize) / float64(md.Size)
		db.metaShare.Store(math.Float64bits(share))
	}
}

// removeFiles removes the tables nums, ignoring errors (what is left is
// deleted as obsolete by the next Open).
func (db *DB) removeFiles(nums []uint64) {
	for _, n := range nums {
		db.fs.Remove(base.MakeFilename(db.dirname, base.FileTypeTable, n))
	}
}
