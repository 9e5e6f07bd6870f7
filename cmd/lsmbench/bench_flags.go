package main

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/logflag"
	"github.com/sievedb/sieve/sstable"
)

// benchNames lists every benchmark -benchmarks accepts, in the order the
// usage text shows them. "flush" and "compact" are steps rather than
// measured workloads, as in db_bench.
var benchNames = []string{
	"fillseq", "fillrandom", "overwrite", "flush", "compact",
	"readrandom", "readmissing", "readhot", "readwhilewriting", "seekrandom", "scan",
	"pfadd", "bfadd",
}

const defaultBenchmarks = "fillrandom,compact,readrandom,readmissing,seekrandom"

// defaultMaxReads caps the default -reads (which is -num otherwise): 200k
// random reads measure a steady state and a filter's rate to ±0.04% at 1%,
// and keep the default run well under a minute on two busy cores.
const defaultMaxReads = 200_000

// config is the parsed command line of the engine benchmark.
type config struct {
	Benchmarks      []string `json:"benchmarks"`
	Num             int      `json:"num"`
	Reads           int      `json:"reads"`
	KeySize         int      `json:"key_size"`
	ValueSize       int      `json:"value_size"`
	CompressRatio   float64  `json:"compression_ratio"`
	Filter          string   `json:"filter"`
	BitsPerKey      float64  `json:"bits_per_key"`
	FingerprintBits int      `json:"fingerprint_bits"`
	CacheSize       int64    `json:"cache_size"`
	MemTableSize    int64    `json:"memtable_size"`
	// Compactions is Options.MaxConcurrentCompactions (0: the default).
	Compactions int `json:"max_concurrent_compactions,omitempty"`
	// L0Compaction, L0Slowdown and L0Stop are Options.L0CompactionTrigger,
	// L0SlowdownWritesTrigger and L0StopWritesTrigger (0: the defaults).
	L0Compaction int `json:"l0_compaction_trigger,omitempty"`
	L0Slowdown   int `json:"l0_slowdown_writes_trigger,omitempty"`
	L0Stop       int `json:"l0_stop_writes_trigger,omitempty"`
	// NoSeekCompactions is Options.DisableSeekCompactions: reads leave
	// the L0 tables the writes made where they are.
	NoSeekCompactions bool `json:"disable_seek_compactions,omitempty"`
	// LBaseMaxBytes is Options.LBaseMaxBytes (0: the default).
	LBaseMaxBytes int64  `json:"lbase_max_bytes,omitempty"`
	BlockSize     int64  `json:"block_size"`
	Compression   string `json:"compression"`
	Sync          bool   `json:"sync"`
	Threads       int    `json:"threads"`
	SeekNexts     int    `json:"seek_nexts"`
	SketchKeys    int    `json:"sketch_keys"`
	SketchReply   bool   `json:"sketch_reply"`
	UseExistingDB bool   `json:"use_existing_db"`
	DB            string `json:"db,omitempty"`
	Seed          uint64 `json:"seed"`
	JSON          bool   `json:"-"`
	CSV           bool   `json:"-"`
	Stats         bool   `json:"-"`
	Progress      string `json:"-"`
	CPUProfile    string `json:"-"`
	// LogFormat and LogLevel choose the engine's log (Options.Logger) on
	// stderr: flushes and compactions at info, stalls at warn, a
	// background error at error.
	LogFormat string       `json:"-"`
	LogLevel  string       `json:"-"`
	logger    *slog.Logger // built from them by parseBenchFlags
}

// newBenchFlags declares the engine benchmark's flags on a fresh FlagSet
// bound to c, with c's current values as defaults.
func newBenchFlags(c *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lsmbench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Func("benchmarks", "comma-separated `list` to run in order (default "+defaultBenchmarks+");\none of: "+strings.Join(benchNames, ", "), func(s string) error {
		return c.setBenchmarks(s)
	})
	fs.Var((*countFlag)(&c.Num), "num", "number of keys to load (`n`; 20000, 20k, 1M, 1_000_000)")
	fs.Var((*countFlag)(&c.Reads), "reads", "operations per read benchmark (`n`)")
	fs.IntVar(&c.KeySize, "key_size", c.KeySize, "key size in `bytes` (>= 8: a scrambled 64-bit number, then '0' padding)")
	fs.IntVar(&c.ValueSize, "value_size", c.ValueSize, "value size in `bytes`")
	fs.Float64Var(&c.CompressRatio, "compression_ratio", c.CompressRatio, "values compress to about this `fraction` (db_bench's default 0.5)")
	fs.StringVar(&c.Filter, "filter", c.Filter, "table filter `policy`: bloom (blocked), standardbloom, cuckoo or none")
	fs.Float64Var(&c.BitsPerKey, "bits_per_key", c.BitsPerKey, "`bits` per key of the bloom and standardbloom filters")
	fs.IntVar(&c.FingerprintBits, "fingerprint_bits", c.FingerprintBits, "fingerprint `bits` of the cuckoo filter (4..16)")
	fs.Var((*sizeFlag)(&c.CacheSize), "cache_size", "block cache `size` (bytes, or 64KiB, 8MiB, 1GiB); 0 disables the cache")
	fs.Var((*sizeFlag)(&c.MemTableSize), "memtable_size", "memtable `size` (>= 64KiB)")
	fs.IntVar(&c.Compactions, "max_compactions", 0, "background compactions at once (Options.MaxConcurrentCompactions; 0: the default)")
	fs.IntVar(&c.L0Compaction, "l0_compaction_trigger", 0, "L0 `tables` that start a compaction into the base level (Options.L0CompactionTrigger; 0: the default)")
	fs.IntVar(&c.L0Slowdown, "l0_slowdown_writes_trigger", 0, "L0 `tables` from which writes are delayed (Options.L0SlowdownWritesTrigger; 0: the default)")
	fs.Var((*sizeFlag)(&c.LBaseMaxBytes), "lbase_max_bytes", "target `size` of the base level, the level L0 compacts into (Options.LBaseMaxBytes; 0: the default)")
	fs.BoolVar(&c.NoSeekCompactions, "disable_seek_compactions", false, "reads never compact L0 (Options.DisableSeekCompactions): the read workloads measure the shape the writes left; by default Gets and seeks through L0 tables of a read-mostly database compact them")
	fs.IntVar(&c.L0Stop, "l0_stop_writes_trigger", 0, "L0 `tables` at which writes stop (Options.L0StopWritesTrigger; 0: the default)")
	fs.Var((*sizeFlag)(&c.BlockSize), "block_size", "target data block `size` (>= 256B)")
	fs.StringVar(&c.Compression, "compression", c.Compression, "block `compression`: snappy or none")
	fs.BoolVar(&c.Sync, "sync", c.Sync, "fsync the WAL on every write (sieve.Sync)")
	fs.IntVar(&c.Threads, "threads", c.Threads, "concurrent `goroutines` per benchmark (writers split the keys, readers the -reads)")
	fs.IntVar(&c.SeekNexts, "seek_nexts", c.SeekNexts, "Next calls after each seek in seekrandom (`n`; peerbench uses 10)")
	fs.IntVar(&c.SketchKeys, "sketch_keys", c.SketchKeys, "HyperLogLogs (pfadd) or Bloom filters (bfadd) the adds are spread over (`n`)")
	fs.BoolVar(&c.SketchReply, "sketch_reply", c.SketchReply, "pfadd and bfadd use the commands with Redis's reply (read, then write) instead of blind adds")
	fs.BoolVar(&c.UseExistingDB, "use_existing_db", c.UseExistingDB, "reuse the database in -db (written earlier with the same -num and -key_size)")
	fs.StringVar(&c.DB, "db", c.DB, "database `directory`, kept afterwards (default: a temporary directory, removed)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "`seed` of the access order (keys themselves do not depend on it)")
	fs.BoolVar(&c.JSON, "json", c.JSON, "print the results as JSON (schema "+jsonSchema+") instead of the text report")
	fs.BoolVar(&c.CSV, "csv", c.CSV, "print the results as CSV, one row per benchmark")
	fs.BoolVar(&c.Stats, "stats", c.Stats, "print the engine's full Metrics at the end")
	fs.StringVar(&c.Progress, "progress", c.Progress, "progress bars: `auto` (when stdout and stderr are terminals), on or off")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a CPU profile of the benchmarks to `file` (go tool pprof)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "engine log on stderr: text or json (one record a line)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "least level of the engine log: debug, info (flushes, compactions), warn (stalls), error or off")
	return fs
}

func defaultConfig() config {
	c := config{
		Num: 1_000_000, Reads: -1, KeySize: 16, ValueSize: 100, CompressRatio: 0.5,
		Filter: "bloom", BitsPerKey: 10, FingerprintBits: 12,
		CacheSize: 8 << 20, MemTableSize: 32 << 20, BlockSize: sstable.DefaultBlockSize,
		Compression: "snappy", Threads: 1, SeekNexts: 10, SketchKeys: 16, Seed: 1, Progress: "auto",
		LogFormat: "text", LogLevel: "warn",
	}
	_ = c.setBenchmarks(defaultBenchmarks)
	return c
}

// parseBenchFlags parses the engine benchmark's command line.
func parseBenchFlags(args []string, out io.Writer) (config, error) {
	c := defaultConfig()
	if err := parseFlags(newBenchFlags(&c, out), args, " (subcommands: filters, sketches; flags start with -)"); err != nil {
		return c, err
	}
	if c.Reads < 0 {
		c.Reads = min(c.Num, defaultMaxReads)
	}
	var err error
	if c.logger, err = logflag.New(os.Stderr, c.LogFormat, c.LogLevel); err != nil {
		return c, usagef("%v", err)
	}
	return c, c.validate()
}

func (c *config) setBenchmarks(s string) error {
	return setNamedList(&c.Benchmarks, s, benchNames, "benchmark ")
}

// validate reports the first setting that makes no sense.
func (c *config) validate() error {
	switch {
	case c.Num < 1:
		return usagef("-num must be at least 1, got %d", c.Num)
	case c.KeySize < 8 || c.KeySize > 1<<16:
		return usagef("-key_size must be in [8, 65536] (keys carry a 64-bit number), got %d", c.KeySize)
	case c.ValueSize < 0 || c.ValueSize > 64<<20:
		return usagef("-value_size must be in [0, 64MiB], got %d", c.ValueSize)
	case !(c.CompressRatio > 0 && c.CompressRatio <= 1):
		return usagef("-compression_ratio must be in (0, 1], got %v", c.CompressRatio)
	case !slices.Contains([]string{"bloom", "standardbloom", "cuckoo", "none"}, c.Filter):
		return usagef("-filter must be bloom, standardbloom, cuckoo or none, got %q", c.Filter)
	case !(c.BitsPerKey >= 1 && c.BitsPerKey <= 64):
		return usagef("-bits_per_key must be in [1, 64], got %v", c.BitsPerKey)
	case c.FingerprintBits < 4 || c.FingerprintBits > 16:
		return usagef("-fingerprint_bits must be in [4, 16], got %d", c.FingerprintBits)
	case c.MemTableSize < 64<<10 || c.MemTableSize > 4<<30:
		return usagef("-memtable_size must be in [64KiB, 4GiB], got %d", c.MemTableSize)
	case c.BlockSize < 256 || c.BlockSize > 16<<20:
		return usagef("-block_size must be in [256B, 16MiB], got %d", c.BlockSize)
	case c.Compression != "snappy" && c.Compression != "none":
		return usagef("-compression must be snappy or none, got %q", c.Compression)
	case c.Threads < 1 || c.Threads > 1024:
		return usagef("-threads must be in [1, 1024], got %d", c.Threads)
	case c.SeekNexts < 0:
		return usagef("-seek_nexts must not be negative, got %d", c.SeekNexts)
	case c.SketchKeys < 1 || c.SketchKeys > 1_000_000:
		return usagef("-sketch_keys must be in [1, 1000000], got %d", c.SketchKeys)
	case c.UseExistingDB && c.DB == "":
		return usagef("-use_existing_db needs -db DIR")
	case c.JSON && c.CSV:
		return usagef("-json and -csv are exclusive")
	}
	return checkProgress(c.Progress)
}

// policy returns the filter policy the flags select.
func (c *config) policy() filter.Policy {
	switch c.Filter {
	case "standardbloom":
		return filter.StandardBloom(c.BitsPerKey)
	case "cuckoo":
		return filter.Cuckoo(c.FingerprintBits)
	case "none":
		return filter.None
	}
	return filter.Bloom(c.BitsPerKey)
}

// options returns the engine options the flags select.
func (c *config) options() *sieve.Options {
	o := &sieve.Options{
		MemTableSize:   c.MemTableSize,
		BlockSize:      int(c.BlockSize),
		BlockCacheSize: c.CacheSize,
		Compression:    sieve.SnappyCompression,
		FilterPolicy:   c.policy(),

		MaxConcurrentCompactions: c.Compactions,
		L0CompactionTrigger:      c.L0Compaction,
		L0SlowdownWritesTrigger:  c.L0Slowdown,
		L0StopWritesTrigger:      c.L0Stop,
		LBaseMaxBytes:            c.LBaseMaxBytes,
		DisableSeekCompactions:   c.NoSeekCompactions,
		Logger:                   c.logger,
	}
	if c.CacheSize == 0 {
		o.BlockCacheSize = -1 // sieve: 0 means "default", negative disables
	}
	if c.Compression == "none" {
		o.Compression = sieve.NoCompression
	}
	return o
}

func (c *config) writeOptions() *sieve.WriteOptions {
	if c.Sync {
		return sieve.Sync
	}
	return sieve.NoSync
}
