package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	pebble2 "github.com/cockroachdb/pebble/v2"
	bloom2 "github.com/cockroachdb/pebble/v2/bloom"
	sstable2 "github.com/cockroachdb/pebble/v2/sstable"
)

func init() {
	register("pebble2", 26, false, "cockroachdb/pebble/v2 v2.1.7, db.Get (L6 filters skipped)", func() Engine {
		return &pebble2Engine{}
	})
	register("pebble2-l6f", 27, false, "pebble/v2 v2.1.7, Get = reused iterator with UseL6Filters + SeekPrefixGE", func() Engine {
		return &pebble2Engine{l6f: true}
	})
}

// pebble2Engine is pebbleEngine for pebble/v2 (whose DefaultComparer has
// Split = len(key) already).
type pebble2Engine struct {
	l6f     bool
	cfg     Config
	db      *pebble2.DB
	getIter *pebble2.Iterator
}

func (e *pebble2Engine) Open(dir string, cfg Config) error {
	e.cfg = cfg
	cache := pebble2.NewCache(cfg.CacheBytes)
	defer cache.Unref()
	opts := &pebble2.Options{Cache: cache, Logger: quietPebble2Logger{}}
	for i := range opts.Levels {
		opts.Levels[i].BlockSize = 4096
		opts.Levels[i].Compression = func() *sstable2.CompressionProfile { return sstable2.SnappyCompression }
		opts.Levels[i].FilterPolicy = bloom2.FilterPolicy(cfg.BitsPerKey)
		opts.Levels[i].FilterType = pebble2.TableFilter
	}
	db, err := pebble2.Open(dir, opts)
	if err != nil {
		return err
	}
	e.db = db
	return nil
}

func (e *pebble2Engine) Put(k, v []byte) error     { return e.db.Set(k, v, pebble2.NoSync) }
func (e *pebble2Engine) PutSync(k, v []byte) error { return e.db.Set(k, v, pebble2.Sync) }

func (e *pebble2Engine) Get(k, dst []byte) ([]byte, bool, error) {
	if e.l6f {
		if e.getIter == nil {
			it, err := e.db.NewIter(&pebble2.IterOptions{UseL6Filters: true})
			if err != nil {
				return dst[:0], false, err
			}
			e.getIter = it
		}
		return prefixGet2(e.getIter, k, dst)
	}
	v, closer, err := e.db.Get(k)
	if errors.Is(err, pebble2.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	dst = append(dst[:0], v...)
	return dst, true, closer.Close()
}

func prefixGet2(it *pebble2.Iterator, k, dst []byte) ([]byte, bool, error) {
	if !it.SeekPrefixGE(k) || !bytes.Equal(it.Key(), k) {
		return dst[:0], false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return dst[:0], false, err
	}
	return append(dst[:0], v...), true, nil
}

func (e *pebble2Engine) NewReader() (Reader, error) {
	if !e.l6f {
		return getReader{e.Get}, nil
	}
	it, err := e.db.NewIter(&pebble2.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, err
	}
	return &pebble2L6Reader{it: it}, nil
}

type pebble2L6Reader struct{ it *pebble2.Iterator }

func (r *pebble2L6Reader) Get(k, dst []byte) ([]byte, bool, error) { return prefixGet2(r.it, k, dst) }
func (r *pebble2L6Reader) Close() error                            { return r.it.Close() }

func (e *pebble2Engine) NewIterator() (Iterator, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &pebble2Iter{it: it}, nil
}

func (e *pebble2Engine) dropGetIter() {
	if e.getIter != nil {
		e.getIter.Close()
		e.getIter = nil
	}
}

func (e *pebble2Engine) FlushCompact() error {
	e.dropGetIter()
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Compact(context.Background(), []byte{}, bytes.Repeat([]byte{0xff}, 32), true)
}

func (e *pebble2Engine) Close() error {
	e.dropGetIter()
	return e.db.Close()
}

// Busy implements busyEngine.
func (e *pebble2Engine) Busy() bool {
	m := e.db.Metrics()
	return m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0
}

func (e *pebble2Engine) Stats() map[string]int64 {
	m := e.db.Metrics()
	s := map[string]int64{
		statFilterChecks:    m.Filter.Hits + m.Filter.Misses,
		statFilterNegatives: m.Filter.Hits,
		statCacheHits:       m.BlockCache.Hits,
		statCacheMisses:     m.BlockCache.Misses,
	}
	var read uint64
	for _, c := range m.CategoryStats {
		read += c.CategoryStats.BlockBytes - c.CategoryStats.BlockBytesInCache
	}
	s[statEngineReadBytes] = int64(read)
	return s
}

func (e *pebble2Engine) Describe() string {
	get := "Get = db.Get (L6 filters skipped)"
	if e.l6f {
		get = "Get = reused iterator, IterOptions.UseL6Filters + SeekPrefixGE"
	}
	return fmt.Sprintf("pebble/v2 v2.1.7, bloom.FilterPolicy(%d) table filter, snappy, 4KiB blocks, block cache %s (filters and indexes charged to it), %s, Put = db.Set(NoSync)",
		e.cfg.BitsPerKey, mib(e.cfg.CacheBytes), get)
}

func (e *pebble2Engine) Shape() string {
	m := e.db.Metrics()
	var b strings.Builder
	for i, l := range m.Levels {
		if l.TablesCount > 0 {
			fmt.Fprintf(&b, "L%d:%d/%s ", i, l.TablesCount, mib(l.TablesSize))
		}
	}
	fmt.Fprintf(&b, "read-amp %d", m.ReadAmp())
	return b.String()
}

func (e *pebble2Engine) WriteAmp() (float64, bool) {
	t := e.db.Metrics().Total()
	return t.WriteAmp(), true
}

type pebble2Iter struct{ it *pebble2.Iterator }

func (i *pebble2Iter) Seek(k []byte) bool { return i.it.SeekGE(k) }
func (i *pebble2Iter) Next() bool         { return i.it.Next() }
func (i *pebble2Iter) Key() []byte        { return i.it.Key() }
func (i *pebble2Iter) Value() []byte      { return i.it.Value() }
func (i *pebble2Iter) Close() error       { return i.it.Close() }

type quietPebble2Logger struct{}

func (quietPebble2Logger) Infof(string, ...interface{}) {}
func (quietPebble2Logger) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble2: "+format+"\n", args...)
}
func (quietPebble2Logger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}
