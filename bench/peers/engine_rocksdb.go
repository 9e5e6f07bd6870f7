//go:build rocksdb

// RocksDB through cgo (github.com/linxGnu/grocksdb v1.7.15, which builds
// against Debian's librocksdb-dev 7.8.3 with no extra flags). Behind the
// build tag `rocksdb` so that the default build stays pure Go:
//
//	apt-get install -y librocksdb-dev
//	go run -tags rocksdb . -engines=sieve,pebble-l6f,rocksdb,rocksdb-ribbon
//
// Debian's librocksdb is built with assertions on (-O2 without -DNDEBUG;
// see README.md): its figures, writes above all, are pessimistic.

package main

import (
	"bufio"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/linxGnu/grocksdb"
)

// rocksdbBuild labels every RocksDB figure.
const rocksdbBuild = "Debian librocksdb 7.8.3, assertions on"

// rocksdbNote labels the RocksDB columns of every report table.
const rocksdbNote = "Debian build of RocksDB 7.8.3, assertions on (-O2 without -DNDEBUG): pessimistic figures, writes above all"

func init() {
	engineNotes["rocksdb"] = rocksdbNote
	engineNotes["rocksdb-ribbon"] = rocksdbNote
	register("rocksdb", 28, false, "RocksDB 7.8.3 (Debian build, assertions on) via grocksdb v1.7.15, full Bloom filter (format_version 5)", func() Engine {
		return &rocksdbEngine{}
	})
	register("rocksdb-ribbon", 29, false, "RocksDB 7.8.3 (Debian build, assertions on) via grocksdb v1.7.15, Ribbon filter at Bloom(bits)'s false-positive rate", func() Engine {
		return &rocksdbEngine{ribbon: true}
	})
}

type rocksdbEngine struct {
	ribbon bool
	cfg    Config
	db     *grocksdb.DB
	opts   *grocksdb.Options
	bbto   *grocksdb.BlockBasedTableOptions
	cache  *grocksdb.Cache
	ro     *grocksdb.ReadOptions
	wo     *grocksdb.WriteOptions
	woSync *grocksdb.WriteOptions
}

// rocksdbTableOptions mirrors the table settings of the Pebble adapter
// (engine_pebble.go) and Pebble v1.1.5's defaults behind them.
func (e *rocksdbEngine) rocksdbTableOptions(cfg Config) *grocksdb.BlockBasedTableOptions {
	t := grocksdb.NewDefaultBlockBasedTableOptions()
	// Pebble: BlockSize 4096 (uncompressed, as RocksDB's block_size).
	t.SetBlockSize(4096)
	// Pebble: NewCache(CacheBytes), filters and indexes charged to it.
	// RocksDB's LRU cache (default shards and high-priority pool) is the
	// nearest counterpart of Pebble's CLOCK-Pro cache; index and filter
	// blocks go through it (cache_index_and_filter_blocks).
	t.SetBlockCache(e.cache)
	t.SetCacheIndexAndFilterBlocks(true)
	// Pebble: IndexBlockSize defaults to BlockSize, so an index over 4 KiB
	// becomes a two-level index of 4 KiB partitions. RocksDB's counterpart
	// is kTwoLevelIndexSearch with metadata_block_size 4096 (the filter
	// stays whole per table, as Pebble's TableFilter: no partition_filters).
	t.SetIndexType(grocksdb.KTwoLevelIndexSearchIndexType)
	t.SetMetadataBlockSize(4096)
	// format_version 5: the cache-local full Bloom filter (RocksDB's
	// "FastLocalBloom") and Ribbon. Pebble's TableFilter is one filter per
	// table, as a RocksDB full filter is (not the old block-based one).
	t.SetFormatVersion(5)
	bits := float64(cfg.BitsPerKey)
	if e.ribbon {
		// Ribbon at bits's Bloom-equivalent rate (about 0.95% at 10) in
		// about 30% less space. bloomBeforeLevel -1: Ribbon on every table,
		// flushes included (RocksDB's default, 0, builds Bloom on flush), so
		// that this engine is Ribbon throughout, as sieve-ribbon is.
		t.SetFilterPolicy(grocksdb.NewRibbonHybridFilterPolicy(bits, -1))
	} else {
		t.SetFilterPolicy(grocksdb.NewBloomFilterFull(bits))
	}
	// Pebble's comparer has Split = len(key): whole keys in the filter,
	// which is RocksDB's whole_key_filtering default. Pebble's db.Get skips
	// L6 filters; RocksDB consults every level's (optimize_filters_for_hits
	// off), as pebble-l6f does.
	return t
}

// rocksdbOptions mirrors the Pebble adapter's database options and the
// Pebble v1.1.5 defaults it runs with.
func (e *rocksdbEngine) rocksdbOptions(cfg Config) *grocksdb.Options {
	o := grocksdb.NewDefaultOptions()
	o.SetCreateIfMissing(true)
	o.SetBlockBasedTableFactory(e.bbto)
	// Pebble: SnappyCompression on every level.
	o.SetCompression(grocksdb.SnappyCompression)
	// Pebble: MemTableSize 4 MiB, MemTableStopWritesThreshold 2.
	o.SetWriteBufferSize(4 << 20)
	o.SetMaxWriteBufferNumber(2)
	// Pebble: L0CompactionThreshold 4, L0StopWritesThreshold 12. Pebble has
	// no slowdown stage: RocksDB's slowdown trigger is put at the stop one.
	o.SetLevel0FileNumCompactionTrigger(4)
	o.SetLevel0SlowdownWritesTrigger(12)
	o.SetLevel0StopWritesTrigger(12)
	// Pebble: LBaseMaxBytes 64 MiB, level sizes computed from the bottom
	// (RocksDB's level_compaction_dynamic_level_bytes), TargetFileSize
	// 2 MiB on every level (the adapter sets all seven levels, so no
	// doubling per level).
	o.SetMaxBytesForLevelBase(64 << 20)
	o.SetLevelCompactionDynamicLevelBytes(true)
	o.SetTargetFileSizeBase(2 << 20)
	o.SetTargetFileSizeMultiplier(1)
	// Pebble: MaxConcurrentCompactions 1 plus its flush goroutine; RocksDB's
	// max_background_jobs 2 is one flush and one compaction thread.
	o.SetMaxBackgroundJobs(2)
	// Pebble: MaxOpenFiles 1000, BytesPerSync 512 KiB.
	o.SetMaxOpenFiles(1000)
	o.SetBytesPerSync(512 << 10)
	// Pebble's adapter logs nothing (quietPebbleLogger); RocksDB has no
	// way to write no LOG file: errors only, and a single small file.
	o.SetInfoLogLevel(grocksdb.ErrorInfoLogLevel)
	o.SetKeepLogFileNum(1)
	o.SetStatsDumpPeriodSec(0)
	// Statistics for the filter and block-cache counters (Pebble keeps its
	// metrics always); RocksDB's default level, kExceptDetailedTimers, also
	// times Gets and Puts for its histograms, a cost Pebble does not pay.
	o.EnableStatistics()
	return o
}

func (e *rocksdbEngine) Open(dir string, cfg Config) error {
	e.cfg = cfg
	e.cache = grocksdb.NewLRUCache(uint64(cfg.CacheBytes))
	e.bbto = e.rocksdbTableOptions(cfg)
	e.opts = e.rocksdbOptions(cfg)
	db, err := grocksdb.OpenDb(e.opts, dir)
	if err != nil {
		e.destroyOptions()
		return err
	}
	e.db = db
	e.ro = grocksdb.NewDefaultReadOptions()
	// WAL on, no fsync (Pebble's NoSync); PutSync fsyncs each write (and
	// RocksDB's write group shares it among concurrent writers).
	e.wo = grocksdb.NewDefaultWriteOptions()
	e.woSync = grocksdb.NewDefaultWriteOptions()
	e.woSync.SetSync(true)
	return nil
}

func (e *rocksdbEngine) Put(k, v []byte) error     { return e.db.Put(e.wo, k, v) }
func (e *rocksdbEngine) PutSync(k, v []byte) error { return e.db.Put(e.woSync, k, v) }

// Get reads through a PinnableSlice (no copy in RocksDB, one into dst).
func (e *rocksdbEngine) Get(k, dst []byte) ([]byte, bool, error) {
	h, err := e.db.GetPinned(e.ro, k)
	if err != nil {
		return dst[:0], false, err
	}
	defer h.Destroy()
	if !h.Exists() {
		return dst[:0], false, nil
	}
	return append(dst[:0], h.Data()...), true, nil
}

// NewReader: RocksDB's Get is safe for concurrent use.
func (e *rocksdbEngine) NewReader() (Reader, error) { return getReader{e.Get}, nil }

func (e *rocksdbEngine) NewIterator() (Iterator, error) {
	return &rocksdbIter{it: e.db.NewIterator(e.ro)}, nil
}

// FlushCompact: Flush (waiting), then CompactRange over everything, which
// compacts L0 down level by level into the bottom one, as Pebble's
// Flush + Compact(all) does. RocksDB's manual compaction runs its
// levels one after another (max_subcompactions 1); Pebble's parallelize
// flag has no counterpart.
func (e *rocksdbEngine) FlushCompact() error {
	fo := grocksdb.NewDefaultFlushOptions()
	defer fo.Destroy()
	fo.SetWait(true)
	if err := e.db.Flush(fo); err != nil {
		return err
	}
	e.db.CompactRange(grocksdb.Range{})
	return nil
}

func (e *rocksdbEngine) Close() error {
	e.db.Close()
	e.db = nil
	e.ro.Destroy()
	e.wo.Destroy()
	e.woSync.Destroy()
	e.destroyOptions()
	return nil
}

// destroyOptions frees the options, table options and cache (after the
// database is closed: the cache must outlive it).
func (e *rocksdbEngine) destroyOptions() {
	e.opts.Destroy()
	e.bbto.Destroy()
	e.cache.Destroy()
}

// Busy implements busyEngine.
func (e *rocksdbEngine) Busy() bool {
	for _, p := range []string{"rocksdb.num-running-compactions", "rocksdb.num-running-flushes",
		"rocksdb.compaction-pending", "rocksdb.mem-table-flush-pending"} {
		if v, ok := e.db.GetIntProperty(p); ok && v > 0 {
			return true
		}
	}
	return false
}

// Stats reads RocksDB's statistics tickers. Filter checks are the full
// filter's: useful (negatives) plus positives; the false positives are
// positives that the table then did not hold.
func (e *rocksdbEngine) Stats() map[string]int64 {
	t := rocksdbTickers(e.opts.GetStatisticsString())
	positive := t["rocksdb.bloom.filter.full.positive"]
	return map[string]int64{
		statFilterChecks:    t["rocksdb.bloom.filter.useful"] + positive,
		statFilterNegatives: t["rocksdb.bloom.filter.useful"],
		statFilterFalsePos:  positive - t["rocksdb.bloom.filter.full.true.positive"],
		statCacheHits:       t["rocksdb.block.cache.hit"],
		statCacheMisses:     t["rocksdb.block.cache.miss"],
		statWALSyncs:        t["rocksdb.wal.synced"],
	}
}

// rocksdbTickers parses the "name COUNT : n" lines of the statistics
// string (7.8's C API has no per-ticker getter).
func rocksdbTickers(s string) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[1] == "COUNT" && f[2] == ":" {
			if n, err := strconv.ParseInt(f[3], 10, 64); err == nil {
				out[f[0]] = n
			}
		}
	}
	return out
}

func (e *rocksdbEngine) Describe() string {
	filter := fmt.Sprintf("NewBloomFilterFull(%d) (format_version 5)", e.cfg.BitsPerKey)
	if e.ribbon {
		filter = fmt.Sprintf("NewRibbonHybridFilterPolicy(%d, -1) (Ribbon on every level, format_version 5)", e.cfg.BitsPerKey)
	}
	return fmt.Sprintf("%s; %s, snappy, 4KiB blocks, two-level index of 4KiB partitions, LRU block cache %s (filters and indexes charged to it), 4MiB memtables, statistics on, Get = db.GetPinned, Put = db.Put (WAL, no sync)",
		rocksdbBuild, filter, mib(e.cfg.CacheBytes))
}

// Shape gives each level's table count and size from the live files.
func (e *rocksdbEngine) Shape() string {
	files := map[int]int{}
	sizes := map[int]int64{}
	for _, f := range e.db.GetLiveFilesMetaData() {
		files[f.Level]++
		sizes[f.Level] += f.Size
	}
	var levels []int
	for l := range files {
		levels = append(levels, l)
	}
	sort.Ints(levels)
	var b strings.Builder
	for _, l := range levels {
		fmt.Fprintf(&b, "L%d:%d/%s ", l, files[l], mib(sizes[l]))
	}
	return strings.TrimSpace(b.String())
}

// WriteAmp is (flush + compaction bytes written) / WAL bytes, Pebble's
// definition, from the statistics since this open.
func (e *rocksdbEngine) WriteAmp() (float64, bool) {
	t := rocksdbTickers(e.opts.GetStatisticsString())
	wal := t["rocksdb.wal.bytes"]
	if wal == 0 {
		return 0, false
	}
	return float64(t["rocksdb.flush.write.bytes"]+t["rocksdb.compact.write.bytes"]) / float64(wal), true
}

// rocksdbIter copies nothing: Key and Value point into RocksDB's memory,
// valid until the next positioning call, as the Iterator contract allows.
// It remembers whether it is positioned: Next on an exhausted RocksDB
// iterator fails an assertion (DBIter::Next: valid_) and aborts the
// process in this build.
type rocksdbIter struct {
	it    *grocksdb.Iterator
	valid bool
}

func (i *rocksdbIter) Seek(k []byte) bool {
	i.it.Seek(k)
	i.valid = i.it.Valid()
	return i.valid
}

func (i *rocksdbIter) Next() bool {
	if !i.valid {
		return false
	}
	i.it.Next()
	i.valid = i.it.Valid()
	return i.valid
}

func (i *rocksdbIter) Key() []byte   { return i.it.Key().Data() }
func (i *rocksdbIter) Value() []byte { return i.it.Value().Data() }

func (i *rocksdbIter) Close() error {
	err := i.it.Err()
	i.it.Close()
	return err
}
