package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/filter"
)

func init() {
	register("sieve", 10, true, "sievedb/sieve, filter.Bloom(bits) (blocked)", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked)", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) }}
	})
	register("sieve-charged", 16, false, "sievedb/sieve, filter.Bloom(bits) (blocked), index and filter blocks charged to the block cache, in 4 KiB partitions once they would take over 3/4 of it (CacheIndexAndFilterBlocks + PartitionAbove)", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked)", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) },
			charged: true, budgetPartitioned: true}
	})
	register("sieve-charged-partitioned", 18, false, "sievedb/sieve, filter.Bloom(bits) (blocked), index and filter blocks charged to the block cache in 4 KiB partitions, always (CacheIndexAndFilterBlocks + PartitionIndexAndFilters)", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked)", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) },
			charged: true, partitioned: true}
	})
	register("sieve-charged-whole", 17, false, "sievedb/sieve, filter.Bloom(bits) (blocked), whole index and filter blocks charged to the block cache (L0 and upper levels pinned)", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked)", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) },
			charged: true}
	})
	register("sieve-cuckoo", 11, true, "sievedb/sieve, filter.Cuckoo(12)", func() Engine {
		return &sieveEngine{policyName: "filter.Cuckoo(12) (-bits ignored)", policy: func(int) filter.Policy { return filter.Cuckoo(12) }}
	})
	register("sieve-standard", 12, false, "sievedb/sieve, filter.StandardBloom(bits)", func() Engine {
		return &sieveEngine{policyName: "filter.StandardBloom(%d) (classic)", policy: func(b int) filter.Policy { return filter.StandardBloom(float64(b)) }}
	})
	register("sieve-fuse8", 13, false, "sievedb/sieve, filter.BinaryFuse(8)", func() Engine {
		return &sieveEngine{policyName: "filter.BinaryFuse(8) (-bits ignored; about 9 bits/key)", policy: func(int) filter.Policy { return filter.BinaryFuse(8) }}
	})
	register("sieve-ribbon", 14, false, "sievedb/sieve, filter.Ribbon(0.7 x bits) (Bloom(bits)'s rate in 30% less space)", func() Engine {
		return &sieveEngine{policyName: "filter.Ribbon(0.7 x %d)", policy: func(b int) filter.Policy { return filter.Ribbon(0.7 * float64(b)) }}
	})
	register("sieve-mem4", 19, false, "sievedb/sieve, filter.Bloom(bits) (blocked), 4 MiB memtables (Pebble's and goleveldb's default size) instead of sieve's 32 MiB", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked), 4 MiB memtables", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) },
			memTableSize: 4 << 20}
	})
	register("sieve-noseek", 20, false, "sievedb/sieve, filter.Bloom(bits) (blocked), DisableSeekCompactions (no seek-triggered flushes or compactions)", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked), DisableSeekCompactions", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) },
			noSeek: true}
	})
	register("sieve-monkey", 15, false, "sievedb/sieve, filter.Bloom(bits) with MonkeyFilters allocation", func() Engine {
		return &sieveEngine{policyName: "filter.Bloom(%d) (blocked), MonkeyFilters (bits/key per level, same total)", policy: func(b int) filter.Policy { return filter.Bloom(float64(b)) },
			alloc: sieve.MonkeyFilters}
	})
}

type sieveEngine struct {
	policyName string
	policy     func(bits int) filter.Policy
	alloc      sieve.FilterAllocation
	charged    bool // Options.CacheIndexAndFilterBlocks
	// partitioned: Options.PartitionIndexAndFilters; budgetPartitioned:
	// Options.PartitionAbove at 3/4 of the cache.
	partitioned, budgetPartitioned bool
	memTableSize                   int64 // Options.MemTableSize; 0: sieve's default
	noSeek                         bool  // Options.DisableSeekCompactions
	blockSize                      int   // Options.BlockSize; 0: sieve's default (SIEVE_BLOCK_SIZE sets it)
	cfg                            Config
	db                             *sieve.DB
}

func (e *sieveEngine) Open(dir string, cfg Config) error {
	e.cfg = cfg
	// SIEVE_BLOCK_SIZE sets every sieve engine's data-block size (bytes),
	// to measure a workload's sensitivity to it in the same run as the
	// peers; Describe reports it.
	if v := os.Getenv("SIEVE_BLOCK_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 256 {
			return fmt.Errorf("SIEVE_BLOCK_SIZE=%q: want a size in bytes of at least 256", v)
		}
		e.blockSize = n
	}
	// SIEVE_LOG=1 logs every sieve engine's flushes and compactions
	// (Options.Logger) to stderr, with the time each took.
	var logger *slog.Logger
	if os.Getenv("SIEVE_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("db", dir)
	}
	db, err := sieve.Open(dir, &sieve.Options{
		Logger:           logger,
		BlockCacheSize:   cfg.CacheBytes,
		MemTableSize:     e.memTableSize,
		BlockSize:        e.blockSize,
		FilterPolicy:     e.policy(cfg.BitsPerKey),
		FilterAllocation: e.alloc,
		Compression:      sieve.SnappyCompression,

		CacheIndexAndFilterBlocks: e.charged,
		PartitionIndexAndFilters:  e.partitioned,
		PartitionAbove:            map[bool]int64{true: cfg.CacheBytes * 3 / 4}[e.budgetPartitioned],
		DisableSeekCompactions:    e.noSeek,
	})
	if err != nil {
		return err
	}
	e.db = db
	return nil
}

func (e *sieveEngine) Put(k, v []byte) error     { return e.db.Put(k, v, sieve.NoSync) }
func (e *sieveEngine) PutSync(k, v []byte) error { return e.db.Put(k, v, sieve.Sync) }

func (e *sieveEngine) Get(k, dst []byte) ([]byte, bool, error) {
	v, err := e.db.Get(k)
	if errors.Is(err, sieve.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	return append(dst[:0], v...), true, nil
}

func (e *sieveEngine) NewIterator() (Iterator, error) {
	return &sieveIter{it: e.db.NewIter(nil)}, nil
}

// FlushCompact: DB.Compact flushes the memtables, then compacts the whole
// key range down to the bottom level.
func (e *sieveEngine) FlushCompact() error { return e.db.Compact(nil, nil) }

func (e *sieveEngine) Close() error { return e.db.Close() }

// Busy implements busyEngine.
func (e *sieveEngine) Busy() bool {
	m := e.db.Metrics()
	return m.Compaction.Running > 0 || m.MemTable.Immutable > 0
}

func (e *sieveEngine) Stats() map[string]int64 {
	m := e.db.Metrics()
	return map[string]int64{
		statFilterChecks:    m.Filter.Checks,
		statFilterNegatives: m.Filter.Negatives,
		statFilterFalsePos:  m.Filter.FalsePositives,
		statTablesSearched:  m.PointLookups.TablesProbed - m.Filter.Negatives,
		statCacheHits:       m.BlockCache.Hits,
		statCacheMisses:     m.BlockCache.Misses,
		statEngineReadBytes: m.PointLookups.BytesRead,
		statWALSyncs:        m.WAL.Syncs,
	}
}

func (e *sieveEngine) Describe() string {
	p := e.policyName
	if strings.Contains(p, "%d") {
		p = fmt.Sprintf(p, e.cfg.BitsPerKey)
	}
	where := "filters and indexes held outside it"
	if e.charged {
		where = "filters and indexes charged to it, L0 and upper levels pinned within it"
	}
	if e.budgetPartitioned {
		where = "filters and indexes charged to it, whole while they take under 3/4 of it (L0 and upper levels pinned), else in 4 KiB partitions"
	}
	if e.partitioned {
		where = "filters and indexes charged to it in 4 KiB partitions, top-level blocks resident"
	}
	bs := "default block size"
	if e.blockSize > 0 {
		bs = fmt.Sprintf("%d-byte blocks (SIEVE_BLOCK_SIZE)", e.blockSize)
	}
	return fmt.Sprintf("%s, snappy, %s, block cache %s (%s), Get = db.Get, Put = db.Put(NoSync)",
		p, bs, mib(e.cfg.CacheBytes), where)
}

func (e *sieveEngine) Shape() string {
	m := e.db.Metrics()
	var b strings.Builder
	for i, l := range m.Levels {
		if l.NumFiles > 0 {
			fmt.Fprintf(&b, "L%d:%d/%s ", i, l.NumFiles, mib(l.Size))
		}
	}
	x := m.IndexFilter
	fmt.Fprintf(&b, "read-amp %d; memtable %s, %d immutable; filter resident %s, index resident %s (outside the cache); pinned %s, cached %s (within it); index %d/%d, filter %d/%d cache hits/misses",
		m.ReadAmp, mib(m.MemTable.Size), m.MemTable.Immutable, mib(m.Filter.ResidentBytes), mib(m.IndexResidentBytes),
		mib(x.PinnedIndexBytes+x.PinnedFilterBytes), mib(x.CachedIndexBytes+x.CachedFilterBytes),
		x.IndexHits, x.IndexMisses, x.FilterHits, x.FilterMisses)
	fmt.Fprintf(&b, "; block cache %s in %d blocks, %d/%d hits/misses", mib(m.BlockCache.Size), m.BlockCache.Count, m.BlockCache.Hits, m.BlockCache.Misses)
	fmt.Fprintf(&b, "; %d flushes (%d seek-triggered), %d compactions (%d seek-triggered); %d iterator refreshes", m.Flush.Count, m.Flush.SeekTriggered, m.Compaction.Count, m.Compaction.SeekTriggered, m.IteratorRefreshes)
	return b.String()
}

func (e *sieveEngine) WriteAmp() (float64, bool) { return e.db.Metrics().WriteAmp, true }

type sieveIter struct{ it *sieve.Iterator }

func (i *sieveIter) Seek(k []byte) bool { return i.it.SeekGE(k) }
func (i *sieveIter) Next() bool         { return i.it.Next() }
func (i *sieveIter) Key() []byte        { return i.it.Key() }
func (i *sieveIter) Value() []byte      { return i.it.Value() }
func (i *sieveIter) Close() error       { return i.it.Close() }

func (e *sieveEngine) NewReader() (Reader, error) { return getReader{e.Get}, nil }
