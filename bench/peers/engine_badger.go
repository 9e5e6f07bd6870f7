package main

import (
	"errors"
	"expvar"
	"fmt"
	"math"
	"strings"

	"github.com/dgraph-io/badger/v4"
	boptions "github.com/dgraph-io/badger/v4/options"
)

func init() {
	register("badger", 40, true, "dgraph-io/badger v4.9.6, BloomFalsePositive set for a real -bits bits/key", func() Engine {
		return &badgerEngine{}
	})
}

// badgerFP is the BloomFalsePositive that makes badger build `bits`
// bits/key. Badger's table builder sizes its filter with
// y.BloomBitsPerKey(n, fp) = ceil(ln2 · (-ln fp / ln2²)) = ceil(-log2 fp),
// which is meant as the probe count but is used as bits/key, and then
// probes k = 0.69·bits times. fp = 2^-(bits-0.5) gives exactly `bits`
// (0.0014 for 10: 10 bits/key, k = 6; the default 0.01 gives 7 bits/key).
func badgerFP(bits int) float64 { return math.Pow(2, -(float64(bits) - 0.5)) }

type badgerEngine struct {
	cfg  Config
	dir  string
	db   *badger.DB
	wa   float64
	hasW bool
}

func (e *badgerEngine) options(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(e.cfg.SyncWrites).
		WithBloomFalsePositive(badgerFP(e.cfg.BitsPerKey)).
		WithCompression(boptions.Snappy).
		WithBlockSize(4096).
		WithBlockCacheSize(e.cfg.CacheBytes).
		WithIndexCacheSize(0) // 0: indexes and filters stay in memory
}

func (e *badgerEngine) Open(dir string, cfg Config) error {
	e.cfg, e.dir = cfg, dir
	db, err := badger.Open(e.options(dir))
	if err != nil {
		return err
	}
	e.db = db
	return nil
}

func (e *badgerEngine) Put(k, v []byte) error {
	return e.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) })
}

// PutSync is Put on a database opened with Config.SyncWrites (badger's
// sync mode is per database: WithSyncWrites).
func (e *badgerEngine) PutSync(k, v []byte) error {
	if !e.cfg.SyncWrites {
		return errors.New("badger: PutSync needs Config.SyncWrites")
	}
	return e.Put(k, v)
}

func (e *badgerEngine) Get(k, dst []byte) ([]byte, bool, error) {
	txn := e.db.NewTransaction(false)
	defer txn.Discard()
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	v, err := item.ValueCopy(dst[:0])
	return v, err == nil, err
}

func (e *badgerEngine) NewIterator() (Iterator, error) {
	txn := e.db.NewTransaction(false)
	o := badger.DefaultIteratorOptions
	o.PrefetchValues = false
	return &badgerIter{txn: txn, it: txn.NewIterator(o)}, nil
}

// FlushCompact: badger has no public memtable flush; Close writes the
// memtables to L0. Reopen, then Flatten. Flatten alone leaves an L0 below
// its compaction trigger (5 tables) where it is, so the reopen lowers the
// trigger to 1: several L0 tables go down to the base level. A single L0
// table (score 1, not above it) stays: it is read-amp 1 already.
func (e *badgerEngine) FlushCompact() error {
	if err := e.db.Close(); err != nil {
		return err
	}
	db, err := badger.Open(e.options(e.dir).WithNumLevelZeroTables(1))
	if err != nil {
		return err
	}
	e.db = db
	return db.Flatten(2)
}

func (e *badgerEngine) Close() error { return e.db.Close() }

func expvarSum(name string, keys ...string) int64 {
	m, ok := expvar.Get(name).(*expvar.Map)
	if !ok {
		return 0
	}
	var n int64
	if len(keys) == 0 {
		m.Do(func(kv expvar.KeyValue) {
			if iv, ok := kv.Value.(*expvar.Int); ok {
				n += iv.Value()
			}
		})
		return n
	}
	for _, k := range keys {
		if iv, ok := m.Get(k).(*expvar.Int); ok {
			n += iv.Value()
		}
	}
	return n
}

func (e *badgerEngine) Stats() map[string]int64 {
	s := map[string]int64{
		statFilterChecks:    expvarSum("badger_hit_num_lsm_bloom_filter", "DoesNotHave_ALL"),
		statFilterNegatives: expvarSum("badger_hit_num_lsm_bloom_filter", "DoesNotHave_HIT"),
		statTablesSearched:  expvarSum("badger_get_num_lsm"),
	}
	if m := e.db.BlockCacheMetrics(); m != nil {
		s[statCacheHits] = int64(m.Hits())
		s[statCacheMisses] = int64(m.Misses())
	}
	if iv, ok := expvar.Get("badger_read_bytes_lsm").(*expvar.Int); ok {
		s[statEngineReadBytes] = iv.Value()
	}
	return s
}

func (e *badgerEngine) Describe() string {
	return fmt.Sprintf("BloomFalsePositive=%.4f (=> %d bits/key, k=%d), snappy, 4KiB blocks, block cache %s, indexes and filters in memory (IndexCacheSize 0), tables mmapped, Put = db.Update(txn.Set), SyncWrites false",
		badgerFP(e.cfg.BitsPerKey), e.cfg.BitsPerKey, int(float64(e.cfg.BitsPerKey)*0.69), mib(e.cfg.CacheBytes))
}

func (e *badgerEngine) Shape() string {
	var b strings.Builder
	for _, l := range e.db.Levels() {
		if l.NumTables > 0 {
			fmt.Fprintf(&b, "L%d:%d/%s ", l.Level, l.NumTables, mib(l.Size))
		}
	}
	return strings.TrimSpace(b.String())
}

func (e *badgerEngine) WriteAmp() (float64, bool) { return 0, false }

type badgerIter struct {
	txn *badger.Txn
	it  *badger.Iterator
	val []byte
}

func (i *badgerIter) Seek(k []byte) bool { i.it.Seek(k); return i.it.Valid() }
func (i *badgerIter) Next() bool         { i.it.Next(); return i.it.Valid() }
func (i *badgerIter) Key() []byte        { return i.it.Item().Key() }
func (i *badgerIter) Value() []byte {
	v, err := i.it.Item().ValueCopy(i.val[:0])
	if err != nil {
		return nil
	}
	i.val = v
	return v
}
func (i *badgerIter) Close() error { i.it.Close(); i.txn.Discard(); return nil }

func (e *badgerEngine) NewReader() (Reader, error) { return getReader{e.Get}, nil }
