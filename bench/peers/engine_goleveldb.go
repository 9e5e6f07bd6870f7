package main

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

func init() {
	register("goleveldb", 30, true, "syndtr/goleveldb v1.0.0", func() Engine { return &goleveldbEngine{} })
}

type goleveldbEngine struct {
	cfg Config
	db  *leveldb.DB
	// writes at open and after FlushCompact, for the write amplification
	wroteBase uint64
	wa        float64
	haveWA    bool
	userBytes atomic.Int64
}

func (e *goleveldbEngine) Open(dir string, cfg Config) error {
	e.cfg = cfg
	db, err := leveldb.OpenFile(dir, &opt.Options{
		BlockCacheCapacity: int(cfg.CacheBytes),
		BlockSize:          4096,
		Compression:        opt.SnappyCompression,
		Filter:             filter.NewBloomFilter(cfg.BitsPerKey),
		NoSync:             !cfg.SyncWrites,
	})
	if err != nil {
		return err
	}
	e.db = db
	var s leveldb.DBStats
	if err := db.Stats(&s); err == nil {
		e.wroteBase = s.IOWrite
	}
	return nil
}

func (e *goleveldbEngine) Put(k, v []byte) error {
	e.userBytes.Add(int64(len(k) + len(v)))
	return e.db.Put(k, v, nil)
}

func (e *goleveldbEngine) PutSync(k, v []byte) error {
	e.userBytes.Add(int64(len(k) + len(v)))
	return e.db.Put(k, v, &opt.WriteOptions{Sync: true})
}

func (e *goleveldbEngine) Get(k, dst []byte) ([]byte, bool, error) {
	v, err := e.db.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return dst[:0], false, nil
	}
	if err != nil {
		return dst[:0], false, err
	}
	return append(dst[:0], v...), true, nil
}

func (e *goleveldbEngine) NewIterator() (Iterator, error) {
	return &goleveldbIter{it: e.db.NewIterator(nil, nil)}, nil
}

// FlushCompact: CompactRange over everything compacts the memtable first,
// then every level.
func (e *goleveldbEngine) FlushCompact() error {
	if err := e.db.CompactRange(util.Range{}); err != nil {
		return err
	}
	var s leveldb.DBStats
	if err := e.db.Stats(&s); err == nil && e.userBytes.Load() > 0 {
		// IOWrite counts WAL and table writes: like the others, relative
		// to the user bytes written.
		e.wa = float64(s.IOWrite-e.wroteBase) / float64(e.userBytes.Load())
		e.haveWA = true
	}
	return nil
}

func (e *goleveldbEngine) Close() error { return e.db.Close() }

func (e *goleveldbEngine) Stats() map[string]int64 {
	var s leveldb.DBStats
	if err := e.db.Stats(&s); err != nil {
		return nil
	}
	return map[string]int64{statEngineReadBytes: int64(s.IORead)}
}

func (e *goleveldbEngine) Describe() string {
	return fmt.Sprintf("filter.NewBloomFilter(%d) (classic, one filter per 2KiB of data blocks), snappy, 4KiB blocks, block cache %s, Put = db.Put (NoSync)",
		e.cfg.BitsPerKey, mib(e.cfg.CacheBytes))
}

func (e *goleveldbEngine) Shape() string {
	var b strings.Builder
	for level := 0; level < 7; level++ {
		v, err := e.db.GetProperty(fmt.Sprintf("leveldb.num-files-at-level%d", level))
		if err != nil {
			return err.Error()
		}
		if v != "0" {
			fmt.Fprintf(&b, "L%d:%s ", level, v)
		}
	}
	var s leveldb.DBStats
	if err := e.db.Stats(&s); err == nil {
		var total int64
		for _, size := range s.LevelSizes {
			total += size
		}
		fmt.Fprintf(&b, "tables %s", mib(total))
	}
	return strings.TrimSpace(b.String())
}

// WriteAmp is storage bytes written (WAL + tables) / user bytes, from the
// load through FlushCompact (goleveldb keeps no WAL byte count).
func (e *goleveldbEngine) WriteAmp() (float64, bool) { return e.wa, e.haveWA }

type goleveldbIter struct{ it iterator.Iterator }

func (i *goleveldbIter) Seek(k []byte) bool { return i.it.Seek(k) }
func (i *goleveldbIter) Next() bool         { return i.it.Next() }
func (i *goleveldbIter) Key() []byte        { return i.it.Key() }
func (i *goleveldbIter) Value() []byte      { return i.it.Value() }
func (i *goleveldbIter) Close() error       { i.it.Release(); return i.it.Error() }

func (e *goleveldbEngine) NewReader() (Reader, error) { return getReader{e.Get}, nil }
