package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

func init() {
	register("pebble", 24, true, "cockroachdb/pebble v1.1.5, db.Get (L6 filters skipped)", func() Engine {
		return &pebbleEngine{}
	})
	register("pebble-l6f", 25, true, "pebble v1.1.5, Get = reused iterator with UseL6Filters + SeekPrefixGE", func() Engine {
		return &pebbleEngine{l6f: true}
	})
}

// pebbleComparer is the default bytewise comparer plus Split = the whole
// key, which SeekPrefixGE needs. Both pebble engines use it, so they build
// identical databases (the filter holds whole keys either way).
var pebbleComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = func(k []byte) int { return len(k) }
	return &c
}()

type pebbleEngine struct {
	l6f bool
	cfg Config
	db  *pebble.DB
	// getIter is the iterator pebble-l6f's Get reuses (created lazily, so
	// the load phase does not pin memtables).
	getIter *pebble.Iterator
}

func (e *pebbleEngine) Open(dir string, cfg Config) error {
	e.cfg = cfg
	cache := pebble.NewCache(cfg.CacheBytes)
	defer cache.Unref()
	opts := &pebble.Options{
		Cache:    cache,
		Comparer: pebbleComparer,
		Logger:   quietPebbleLogger{},
	}
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:    4096,
			Compression:  pebble.SnappyCompression,
			FilterPolicy: bloom.FilterPolicy(cfg.BitsPerKey),
			FilterType:   pebble.TableFilter,
		}
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return err
	}
	e.db = db
	return nil
}

func (e *pebbleEngine) Put(k, v []byte) error     { return e.db.Set(k, v, pebble.NoSync) }
func (e *pebbleEngine) PutSync(k, v []byte) error { return e.db.Set(k, v, pebble.Sync) }

func (e *pebbleEngine) Get(k, dst []byte) ([]byte, bool, error) {
	if e.l6f {
		if e.getIter == nil {
			it, err := e.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
			if err != nil {
				return dst[:0], false, err
			}
			e.getIter = it
		}
		return prefixGet(e.getIter, k, dst)
	}
	v, closer, err := e.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	dst = append(dst[:0], v...)
	return dst, true, closer.Close()
}

// prefixGet is pebble-l6f's point lookup: SeekPrefixGE consults the table
// filters, L6 included when the iterator was opened with UseL6Filters.
func prefixGet(it *pebble.Iterator, k, dst []byte) ([]byte, bool, error) {
	if !it.SeekPrefixGE(k) || !bytes.Equal(it.Key(), k) {
		return dst[:0], false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return dst[:0], false, err
	}
	return append(dst[:0], v...), true, nil
}

// NewReader: pebble's db.Get is safe for concurrent use; pebble-l6f gives
// each reader its own reused UseL6Filters iterator.
func (e *pebbleEngine) NewReader() (Reader, error) {
	if !e.l6f {
		return getReader{e.Get}, nil
	}
	it, err := e.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, err
	}
	return &pebbleL6Reader{it: it}, nil
}

type pebbleL6Reader struct{ it *pebble.Iterator }

func (r *pebbleL6Reader) Get(k, dst []byte) ([]byte, bool, error) { return prefixGet(r.it, k, dst) }
func (r *pebbleL6Reader) Close() error                            { return r.it.Close() }

func (e *pebbleEngine) NewIterator() (Iterator, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it}, nil
}

func (e *pebbleEngine) FlushCompact() error {
	e.dropGetIter()
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Compact([]byte{}, bytes.Repeat([]byte{0xff}, 32), true)
}

func (e *pebbleEngine) dropGetIter() {
	if e.getIter != nil {
		e.getIter.Close()
		e.getIter = nil
	}
}

func (e *pebbleEngine) Close() error {
	e.dropGetIter()
	return e.db.Close()
}

// Busy implements busyEngine.
func (e *pebbleEngine) Busy() bool {
	m := e.db.Metrics()
	return m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0
}

func (e *pebbleEngine) Stats() map[string]int64 {
	m := e.db.Metrics()
	return map[string]int64{
		statFilterChecks:    m.Filter.Hits + m.Filter.Misses,
		statFilterNegatives: m.Filter.Hits,
		statCacheHits:       m.BlockCache.Hits,
		statCacheMisses:     m.BlockCache.Misses,
	}
}

func (e *pebbleEngine) Describe() string {
	get := "Get = db.Get (L6 filters skipped)"
	if e.l6f {
		get = "Get = reused iterator, IterOptions.UseL6Filters + SeekPrefixGE (Comparer.Split = len(key))"
	}
	return fmt.Sprintf("bloom.FilterPolicy(%d) table filter, snappy, 4KiB blocks, block cache %s (filters and indexes charged to it), %s, Put = db.Set(NoSync)",
		e.cfg.BitsPerKey, mib(e.cfg.CacheBytes), get)
}

func (e *pebbleEngine) Shape() string {
	m := e.db.Metrics()
	var b strings.Builder
	for i, l := range m.Levels {
		if l.NumFiles > 0 {
			fmt.Fprintf(&b, "L%d:%d/%s ", i, l.NumFiles, mib(l.Size))
		}
	}
	fmt.Fprintf(&b, "read-amp %d", m.ReadAmp())
	return b.String()
}

func (e *pebbleEngine) WriteAmp() (float64, bool) {
	t := e.db.Metrics().Total()
	return t.WriteAmp(), true
}

type pebbleIter struct{ it *pebble.Iterator }

func (i *pebbleIter) Seek(k []byte) bool { return i.it.SeekGE(k) }
func (i *pebbleIter) Next() bool         { return i.it.Next() }
func (i *pebbleIter) Key() []byte        { return i.it.Key() }
func (i *pebbleIter) Value() []byte      { return i.it.Value() }
func (i *pebbleIter) Close() error       { return i.it.Close() }

type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...interface{}) {}
func (quietPebbleLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}
