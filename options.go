package sieve

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
)

// Compression selects how SSTable blocks are compressed. It is
// sstable.Compression: one type, one set of values, re-exported here.
type Compression = sstable.Compression

const (
	// DefaultCompression is the zero value; Open replaces it with
	// SnappyCompression.
	DefaultCompression = sstable.DefaultCompression
	// NoCompression stores blocks as they are.
	NoCompression = sstable.NoCompression
	// SnappyCompression compresses each block with Snappy when that saves
	// at least 1/8 of the block.
	SnappyCompression = sstable.SnappyCompression
)

// Limits on what one write may hold. Larger keys or values are refused with
// an error and nothing of the write is applied.
const (
	MaxKeySize   = 64 << 20
	MaxValueSize = 64 << 20
	// MaxBatchSize bounds the encoded size of one batch.
	MaxBatchSize = 1 << 30
)

// Options configure a database. The zero value of every field means "use
// the default"; Open validates the rest, and an error for a field out of
// range (wrapping ErrInvalidOptions) names the field and its allowed range.
type Options struct {
	// FS is the file system; default vfs.Default (the OS).
	FS vfs.FS
	// MemTableSize is the size at which a memtable becomes immutable and a
	// new WAL starts. Default 32 MiB.
	MemTableSize int64
	// MaxImmutableMemTables is how many full memtables may wait for a flush
	// before writes stall. Default 2.
	MaxImmutableMemTables int
	// BlockSize is the target uncompressed size of SSTable data blocks.
	// Default 3 KiB (sstable.DefaultBlockSize): a point read or seek that
	// misses the block cache checksums and decodes one block, and that is
	// most of its cost, so sieve, built for point lookups, cuts smaller
	// blocks than the usual 4 KiB, for more index entries (doc/tuning.md
	// measures larger blocks, with the command to repeat it).
	BlockSize int
	// BlockRestartInterval is the number of keys between restart points in
	// a data block. Default 16.
	BlockRestartInterval int
	// BlockCacheSize is the capacity of the block cache in bytes. Default
	// 8 MiB; a negative value disables the cache.
	BlockCacheSize int64
	// CacheIndexAndFilterBlocks (RocksDB's name) keeps no table's index
	// and filter blocks resident: they are loaded through the block cache
	// and charged to BlockCacheSize (with their decoded index entries), at
	// a high priority: they live in the cache's meta pool, which may take
	// the whole budget and for which data blocks are evicted; only another
	// index or filter block (or a pin) evicts one. A lookup holds a reference on them while it uses them; one
	// that finds them evicted reads them again (a filter block that cannot
	// be read or decoded then lets the lookup read the data: fail open,
	// counted in Metrics.IndexFilter.FilterFailOpen). Default false: every
	// open table keeps both resident outside the cache (doc/tuning.md gives
	// the bytes per key). Ignored when the cache is disabled.
	CacheIndexAndFilterBlocks bool
	// PinL0FilterAndIndexBlocks, with CacheIndexAndFilterBlocks, pins the
	// index and filter blocks of the tables of L0 and of every level above
	// the bottom (the deepest non-empty level) once a point lookup probes
	// them: held outside the cache until the table is closed, their bytes
	// reserved in BlockCacheSize (the capacity left for data blocks
	// shrinks by them). At most half the cache is pinned; a table beyond
	// that stays charged to the cache. A table keeps its pin if a move
	// takes it to the bottom. PinDefault (the zero value) pins; PinOff
	// does not.
	PinL0FilterAndIndexBlocks PinMode
	// PartitionIndexAndFilters writes the index and the filter of a table
	// whose index or filter outgrows MetadataBlockSize as partitions of
	// about that size under a small top-level block (RocksDB's
	// partitioned index and filters; table format v2): with
	// CacheIndexAndFilterBlocks a lookup loads one index partition and at
	// most one filter partition through the block cache instead of the
	// whole blocks, and only the top-level blocks stay resident. Without
	// charging the partitions are read whole at open, as today's blocks.
	// Partitioned tables are not pinned (PinL0FilterAndIndexBlocks): their
	// partitions stay in the cache. Default false.
	PartitionIndexAndFilters bool
	// MetadataBlockSize is the target size of an index or filter
	// partition. Default 4096.
	MetadataBlockSize int
	// PartitionAbove, with CacheIndexAndFilterBlocks and without
	// PartitionIndexAndFilters, partitions the tables written while the
	// database's index and filter blocks would take more than that many
	// bytes (the table bytes of every column family times the metadata
	// share of the last table written): whole blocks probe faster while
	// they fit the cache beside the data, partitions take over once they
	// would crowd it out. Tables keep the form they were written in until
	// a compaction rewrites them. 0 (the default): never.
	PartitionAbove int64
	// MaxOpenFiles bounds the table cache (open table readers). Default 1000.
	MaxOpenFiles int
	// Compression of SSTable blocks; default Snappy.
	Compression Compression
	// FilterPolicy builds the per-table filter of the default column
	// family; default filter.Bloom(10). Use filter.None for no filter.
	FilterPolicy filter.Policy
	// LevelFilterPolicies, if set, gives the filter policy of the tables
	// written into each level (index = output level: 0 for flushes, the
	// compaction's output level otherwise); a nil or missing entry uses
	// FilterPolicy. Tables record the policy they were built with, so a DB
	// reopened with other policies reads its old tables with their own
	// filters.
	LevelFilterPolicies []filter.Policy
	// FilterAllocation chooses each new table's bits per key: UniformFilters
	// (the default) uses the level's policy as given; MonkeyFilters resizes
	// it from the current level sizes so that the total filter memory stays
	// that of the configured sizes while the sum of per-level false-positive
	// rates is minimized (see FilterAllocation).
	FilterAllocation FilterAllocation
	// Prefix, if set, returns the length of a key's prefix, as Pebble's
	// Comparer.Split: key[:Prefix(key)] (a result outside [0, len(key)] is
	// clamped). Table filters then hold each key's prefix beside the key
	// (RocksDB's prefix_extractor, whole-key filtering kept) and
	// Iterator.SeekPrefixGE skips the tables whose filter rules a prefix
	// out. The function must be deterministic and Split-like: every key
	// that starts with a key's prefix p has prefix p (a fixed length, or
	// up to a separator byte), so that the keys of prefix p are exactly
	// the keys in [p, p's successor). nil (the default) means no prefixes;
	// SeekPrefixGE then fails with ErrNoPrefix.
	Prefix func(key []byte) int
	// PrefixName names Prefix; required with it. Tables record it, and
	// only a table recording the current name is ever ruled out by
	// prefix: reopening with another function (under another name) reads
	// older tables without prefix skipping instead of missing keys.
	PrefixName string
	// L0CompactionTrigger is the number of L0 tables that triggers a
	// compaction into Lbase. Default 4.
	L0CompactionTrigger int
	// L0StopWritesTrigger is the number of L0 tables at which writes stall
	// until compaction catches up. Default 36 (RocksDB's).
	L0StopWritesTrigger int
	// L0SlowdownWritesTrigger is the number of L0 tables from which every
	// write group is delayed by 1 ms, so that compaction catches up before
	// L0StopWritesTrigger stops writes. At most L0StopWritesTrigger.
	// Default L0StopWritesTrigger − 4, at most 20 (RocksDB's default) and
	// at least L0CompactionTrigger + 1: 20 with the default triggers.
	L0SlowdownWritesTrigger int
	// DisableSeekCompactions turns off seek-triggered compactions: by
	// default an L0 table that iterator seeks keep positioning in beside
	// other sources (max(100, size/16 KiB) seeks, LevelDB's allowance;
	// 64 Gets that consulted it in vain before another table count as
	// one seek) gets L0 compacted into the base level before
	// L0CompactionTrigger tables accumulate, so that a read-mostly
	// database does not keep overlapping L0 tables for good. It also
	// turns off seek-triggered flushes: by default a mutable memtable
	// holding at least a quarter of MemTableSize is rotated and flushed
	// when, over 1024 iterator seeks that merged it beside tables, there
	// was less than one write for every three seeks.
	DisableSeekCompactions bool
	// LevelMultiplier is the size ratio between adjacent levels. Default 10.
	LevelMultiplier int
	// LBaseMaxBytes is the target size of the base level, the level L0
	// compacts into. Levels are sized dynamically from the bottom level up
	// (as RocksDB's level_compaction_dynamic_level_bytes): a small database
	// compacts L0 straight into L6. Default 64 MiB.
	LBaseMaxBytes int64
	// TargetFileSize is the size at which compaction output tables are
	// split. Default 4 MiB.
	TargetFileSize int64
	// MaxConcurrentCompactions bounds background compactions. Default 1.
	MaxConcurrentCompactions int
	// MaxSubcompactions is how many goroutines Compact (a manual
	// compaction, whose caller waits for it) may split one compaction of
	// at least twice TargetFileSize into: disjoint key ranges merged and
	// written in parallel, installed together (RocksDB's
	// max_subcompactions). So may a background compaction out of an L0
	// that holds twice L0CompactionTrigger tables or more, which writers
	// are about to wait on (L0SlowdownWritesTrigger); other background
	// compactions stay one goroutine each, leaving the other cores to
	// writers. Default GOMAXPROCS at Open, at most 4; 1 disables.
	MaxSubcompactions int
	// Merger resolves merge operands of the default column family; nil
	// means Merge is refused.
	Merger Merger
	// MaxSuccessiveMerges caps the merge operands a key may stack in the
	// memtable: the write that would exceed it stores the merged value
	// instead (RocksDB's max_successive_merges), so reads of a hot key stay
	// fast. Default 64; a negative value disables the cap.
	// ColumnFamilyOptions.MaxSuccessiveMerges sets it per family.
	MaxSuccessiveMerges int
	// Now is the clock expiry is judged by (PutWithExpiry); nil: time.Now.
	// A test sets its own to move time.
	Now func() time.Time
	// CompactionFilter removes values of the default column family during
	// compaction (ColumnFamilyOptions.CompactionFilter for other families).
	CompactionFilter CompactionFilter
	// Logger receives background events (flushes, compactions, stalls,
	// errors). Default: discard.
	Logger *slog.Logger
	// ErrorIfExists makes Open fail if the database already exists.
	ErrorIfExists bool
	// ReadOnly opens the database without writing anything: no recovery
	// writes, no new WAL, no compactions; writes return ErrReadOnly.
	ReadOnly bool
	// WALRecovery says what Open does with a damaged WAL (see
	// WALRecoveryMode for what each mode may lose). The default,
	// WALRecoveryTolerateCorruptedTail, fails Open on any damage but the
	// torn tail of the newest WAL. In the other modes, when replay dropped
	// something, Open flushes what it replayed before it returns (so that
	// the damaged WALs are never replayed again), logs each dropped range
	// at warn level, keeps the damaged WALs in the lost/ folder and reports
	// them in Metrics().WALRecovery.
	WALRecovery WALRecoveryMode
}

// validate returns an error naming the first field of c out of range and
// the range it must be in.
func (c *Options) validate() error {
	type check struct {
		name string
		bad  bool
		val  any
		want string
	}
	const dflt = "0 for the default, or "
	checks := []check{
		{"MemTableSize", c.MemTableSize < 0 || (c.MemTableSize > 0 && c.MemTableSize < 64<<10) || c.MemTableSize > 4<<30, c.MemTableSize, dflt + "65536 (64 KiB) to 4294967296 (4 GiB)"},
		{"MaxImmutableMemTables", c.MaxImmutableMemTables < 0 || c.MaxImmutableMemTables > 64, c.MaxImmutableMemTables, dflt + "1 to 64"},
		{"BlockSize", c.BlockSize < 0 || (c.BlockSize > 0 && c.BlockSize < 256) || c.BlockSize > 16<<20, c.BlockSize, dflt + "256 to 16777216 (16 MiB)"},
		{"PartitionAbove", c.PartitionAbove < 0, c.PartitionAbove, "0 for never, or more"},
		{"MetadataBlockSize", c.MetadataBlockSize < 0 || (c.MetadataBlockSize > 0 && c.MetadataBlockSize < 256) || c.MetadataBlockSize > 16<<20, c.MetadataBlockSize, dflt + "256 to 16777216 (16 MiB)"},
		{"BlockRestartInterval", c.BlockRestartInterval < 0 || c.BlockRestartInterval > 1<<16, c.BlockRestartInterval, dflt + "1 to 65536"},
		{"MaxOpenFiles", c.MaxOpenFiles < 0 || (c.MaxOpenFiles > 0 && c.MaxOpenFiles < 16), c.MaxOpenFiles, dflt + "16 or more"},
		{"Compression", c.Compression > SnappyCompression, c.Compression, "DefaultCompression, NoCompression or SnappyCompression"},
		{"PinL0FilterAndIndexBlocks", c.PinL0FilterAndIndexBlocks > PinOff, c.PinL0FilterAndIndexBlocks, "PinDefault, PinOn or PinOff"},
		{"FilterAllocation", c.FilterAllocation > MonkeyFilters, c.FilterAllocation, "UniformFilters or MonkeyFilters"},
		{"len(LevelFilterPolicies)", len(c.LevelFilterPolicies) > manifest.NumLevels, len(c.LevelFilterPolicies), fmt.Sprintf("at most %d, one per level", manifest.NumLevels)},
		{"L0CompactionTrigger", c.L0CompactionTrigger < 0, c.L0CompactionTrigger, dflt + "1 or more"},
		{"L0StopWritesTrigger", c.L0StopWritesTrigger < 0, c.L0StopWritesTrigger, dflt + "at least L0CompactionTrigger"},
		{"L0SlowdownWritesTrigger", c.L0SlowdownWritesTrigger < 0, c.L0SlowdownWritesTrigger, dflt + "1 to L0StopWritesTrigger"},
		{"LevelMultiplier", c.LevelMultiplier < 0 || c.LevelMultiplier == 1, c.LevelMultiplier, dflt + "2 or more"},
		{"LBaseMaxBytes", c.LBaseMaxBytes < 0, c.LBaseMaxBytes, dflt + "1 or more"},
		{"TargetFileSize", c.TargetFileSize < 0 || (c.TargetFileSize > 0 && c.TargetFileSize < 4<<10), c.TargetFileSize, dflt + "4096 (4 KiB) or more"},
		{"MaxConcurrentCompactions", c.MaxConcurrentCompactions < 0 || c.MaxConcurrentCompactions > 64, c.MaxConcurrentCompactions, dflt + "1 to 64"},
		{"MaxSubcompactions", c.MaxSubcompactions < 0 || c.MaxSubcompactions > 64, c.MaxSubcompactions, dflt + "1 to 64"},
	}
	for _, ch := range checks {
		if ch.bad {
			return fmt.Errorf("%w: %s = %v is out of range (want %s)", ErrInvalidOptions, ch.name, ch.val, ch.want)
		}
	}
	return checkPrefixOptions(c.Prefix, c.PrefixName)
}

// withDefaults returns a copy of o (nil allowed) with defaults filled in,
// or an error naming the first invalid field.
func (o *Options) withDefaults() (*Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def64 := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	def64(&c.MemTableSize, 32<<20)
	def(&c.MaxImmutableMemTables, 2)
	def(&c.BlockSize, sstable.DefaultBlockSize)
	def(&c.BlockRestartInterval, 16)
	def(&c.MetadataBlockSize, 4096)
	def64(&c.BlockCacheSize, 8<<20)
	def(&c.MaxOpenFiles, 1000)
	if c.Compression == DefaultCompression {
		c.Compression = SnappyCompression
	}
	if c.FilterPolicy == nil {
		c.FilterPolicy = defaultFilterPolicy()
	}
	def(&c.L0CompactionTrigger, 4)
	def(&c.L0StopWritesTrigger, 36)
	if c.L0StopWritesTrigger < c.L0CompactionTrigger {
		return nil, fmt.Errorf("%w: L0StopWritesTrigger = %d is out of range (want at least L0CompactionTrigger, %d)",
			ErrInvalidOptions, c.L0StopWritesTrigger, c.L0CompactionTrigger)
	}
	def(&c.L0SlowdownWritesTrigger, min(max(min(c.L0StopWritesTrigger-4, 20), c.L0CompactionTrigger+1), c.L0StopWritesTrigger))
	if c.L0SlowdownWritesTrigger > c.L0StopWritesTrigger {
		return nil, fmt.Errorf("%w: L0SlowdownWritesTrigger = %d is out of range (want at most L0StopWritesTrigger, %d)",
			ErrInvalidOptions, c.L0SlowdownWritesTrigger, c.L0StopWritesTrigger)
	}
	def(&c.LevelMultiplier, 10)
	def64(&c.LBaseMaxBytes, 64<<20)
	def64(&c.TargetFileSize, 4<<20)
	def(&c.MaxConcurrentCompactions, 1)
	def(&c.MaxSubcompactions, min(runtime.GOMAXPROCS(0), 4))
	def(&c.MaxSuccessiveMerges, 64)
	if c.WALRecovery > WALRecoverySkipDamaged {
		return nil, fmt.Errorf("%w: WALRecovery = %d is out of range", ErrInvalidOptions, c.WALRecovery)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &c, nil
}

// PinMode is Options.PinL0FilterAndIndexBlocks: a tri-state, because pinning
// is on by default when charging and a Go zero value cannot say "true".
type PinMode uint8

const (
	// PinDefault pins (when CacheIndexAndFilterBlocks is on).
	PinDefault PinMode = iota
	// PinOn pins.
	PinOn
	// PinOff charges every table's index and filter to the cache unpinned.
	PinOff
)

// pins reports whether upper-level tables' index and filter blocks are
// pinned.
func (o *Options) pins() bool {
	return o.CacheIndexAndFilterBlocks && o.BlockCacheSize > 0 && o.PinL0FilterAndIndexBlocks != PinOff
}

// WriteOptions control one write.
type WriteOptions struct {
	// Sync makes the write durable (the WAL is fsynced) before it is
	// acknowledged. Without it a crash may lose the write — but what
	// survives is always a prefix of the acknowledged writes.
	Sync bool
}

var (
	// Sync acknowledges a write only once it is durable.
	Sync = &WriteOptions{Sync: true}
	// NoSync acknowledges a write once it is in the memtable and the
	// WAL's buffer in this process, which is written to the OS within
	// 2 ms. THIS CAN LOSE RECENT WRITES ON A CRASH: a process kill (a
	// panic, SIGKILL, the OOM killer) loses up to the last 2 ms of
	// acknowledged writes, a power loss or kernel crash everything not yet
	// fsynced. What survives is a prefix of the acknowledged writes, and a
	// clean Close loses nothing.
	NoSync = &WriteOptions{Sync: false}
)

func (o *WriteOptions) sync() bool { return o != nil && o.Sync }

// policies are the filter policies o names, for reading tables outside a
// DB (Repair).
func (o *Options) policies() []filter.Policy {
	out := []filter.Policy{o.FilterPolicy}
	for _, p := range o.LevelFilterPolicies {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}
