// Command peers benchmarks sieve against other embedded Go key-value
// engines (Pebble, goleveldb, Badger) on identical inputs in one process
// and reports each engine's figures as a ratio to a baseline engine.
//
// It is its own module so that the library's go.mod never depends on the
// peers. See README.md in this directory.
package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Config is what every engine is asked to honour.
type Config struct {
	// CacheBytes is the block cache size.
	CacheBytes int64
	// BitsPerKey is the Bloom filter budget per key.
	BitsPerKey int
	// SyncWrites opens an engine whose sync mode is set per database
	// (badger) for PutSync; the others sync per write.
	SyncWrites bool
}

// Engine is one key-value store driven through its public API. Put,
// PutSync, NewIterator, NewReader and Stats may be called from several
// goroutines at once (the ycsb and syncwrite modes do); the rest from one
// goroutine at a time.
type Engine interface {
	// Open opens (creating if needed) the store in dir.
	Open(dir string, cfg Config) error
	// Put writes one key as a batch of one, WAL on, no fsync.
	Put(key, value []byte) error
	// PutSync writes one key as a batch of one and returns once it is
	// durable (fsynced; concurrent writers may share an fsync).
	PutSync(key, value []byte) error
	// Get appends the value of key to dst[:0]; found is false for an
	// absent key (which is not an error).
	Get(key, dst []byte) (value []byte, found bool, err error)
	// NewIterator returns an iterator over the whole store.
	NewIterator() (Iterator, error)
	// NewReader returns a Get handle for one reader goroutine (-threads);
	// readers of one engine may run concurrently with each other.
	NewReader() (Reader, error)
	// FlushCompact flushes the memtables and compacts everything, the
	// engine's own way, and waits for it.
	FlushCompact() error
	// Close closes the store.
	Close() error
	// Stats returns cumulative engine counters (names in statNames); a
	// counter the engine does not expose is absent.
	Stats() map[string]int64
	// Describe says how the engine maps Config.
	Describe() string
	// Shape describes the LSM (levels and tables) while open.
	Shape() string
	// WriteAmp is the engine's own write amplification, if it exposes one.
	WriteAmp() (float64, bool)
}

// Iterator is a forward iterator. Key and Value are valid until the next
// positioning call.
type Iterator interface {
	// Seek moves to the first key >= key and reports whether there is one.
	Seek(key []byte) bool
	// Next moves to the following key and reports whether there is one.
	Next() bool
	// Key returns the current key.
	Key() []byte
	// Value returns the current value.
	Value() []byte
	// Close releases the iterator.
	Close() error
}

// Reader is one reader goroutine's point-lookup handle.
type Reader interface {
	// Get is Engine.Get.
	Get(key, dst []byte) (value []byte, found bool, err error)
	// Close releases the handle.
	Close() error
}

// getReader is the Reader of engines whose Get is safe for concurrent use.
type getReader struct {
	get func(key, dst []byte) ([]byte, bool, error)
}

func (r getReader) Get(k, dst []byte) ([]byte, bool, error) { return r.get(k, dst) }
func (r getReader) Close() error                            { return nil }

// Shared counter names for Engine.Stats.
const (
	statFilterChecks    = "filter.checks"
	statFilterNegatives = "filter.negatives"
	statFilterFalsePos  = "filter.false_positives"
	statTablesSearched  = "table.searches"
	statCacheHits       = "blockcache.hits"
	statCacheMisses     = "blockcache.misses"
	statEngineReadBytes = "engine.read.bytes"
	statWALSyncs        = "wal.syncs"
)

var statNames = []string{statFilterChecks, statFilterNegatives, statFilterFalsePos,
	statTablesSearched, statCacheHits, statCacheMisses, statEngineReadBytes, statWALSyncs}

type engineInfo struct {
	name      string
	order     int
	inDefault bool
	summary   string
	ctor      func() Engine
}

var registry = map[string]engineInfo{}

// engineNotes labels an engine's column in every table of every report
// (table.write): RocksDB's figures come from Debian's build, whose
// assertions are on.
var engineNotes = map[string]string{}

func register(name string, order int, inDefault bool, summary string, ctor func() Engine) {
	if _, dup := registry[name]; dup {
		panic("duplicate engine " + name)
	}
	registry[name] = engineInfo{name, order, inDefault, summary, ctor}
}

func sortedEngines() []engineInfo {
	var out []engineInfo
	for _, e := range registry {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// selectEngines resolves -engines: "default", "all" or a comma list.
func selectEngines(spec string) ([]engineInfo, error) {
	switch spec {
	case "", "default", "all":
		var out []engineInfo
		for _, e := range sortedEngines() {
			if spec == "all" || e.inDefault {
				out = append(out, e)
			}
		}
		return out, nil
	}
	var out []engineInfo
	seen := map[string]bool{}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		e, ok := registry[name]
		if !ok {
			return nil, fmt.Errorf("unknown engine %q (have %s)", name, engineNames())
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, e)
		}
	}
	return out, nil
}

func engineNames() string {
	var names []string
	for _, e := range sortedEngines() {
		names = append(names, e.name)
	}
	return strings.Join(names, ",")
}

// busyEngine is an engine that can tell whether it is flushing or
// compacting in the background.
type busyEngine interface{ Busy() bool }

// settle waits until e's background flushes and compactions are done and
// returns how long that took, so that the work one engine's writes left
// behind does not run during the next engine's round (and the next
// engine's figures). An engine that can tell (busyEngine) is polled until
// it is seen idle twice, 10 ms apart; then, for every engine, the process
// must have used under quietCPU of CPU in each of two 10 ms windows in a
// row: goleveldb and Badger cannot tell, and their compactions otherwise
// ran on into the next engine's round. Each wait gives up after a minute.
func settle(e Engine) time.Duration {
	start := time.Now()
	if b, ok := e.(busyEngine); ok {
		for idle := 0; idle < 2 && time.Since(start) < time.Minute; {
			if b.Busy() {
				idle = 0
			} else {
				idle++
			}
			if idle < 2 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	quietStart := time.Now()
	last := processCPU()
	for quiet := 0; quiet < 2 && time.Since(quietStart) < time.Minute; {
		time.Sleep(10 * time.Millisecond)
		now := processCPU()
		if now-last < quietCPU {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	return time.Since(start)
}

// quietCPU is the process CPU time under which a 10 ms window counts as
// quiet in settle: a tenth of one processor (a compaction or a flush
// keeps one busy; the harness's own sleeping costs microseconds).
const quietCPU = time.Millisecond

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	cpu, _ := processUsage()
	return cpu
}
