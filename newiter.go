package sieve

import (
	"sync"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/memtable"
)

// NewIter returns an iterator over the default column family as of now.
func (db *DB) NewIter(o *IterOptions) *Iterator {
	if err := db.checkOpen(); err != nil {
		return &Iterator{err: err, iter: emptyIter{}}
	}
	return db.newIter(0, o, nil)
}

// newIter builds the iterator stack for column family cf as of snapshot
// snapSeq (nil = now): the memtables (newest first), each L0 table, and
// one level iterator per deeper level, merged.
func (db *DB) newIter(cf uint32, o *IterOptions, snapSeq *uint64) *Iterator {
	if err := db.checkOpen(); err != nil {
		return &Iterator{err: err, iter: emptyIter{}}
	}
	var lower, upper []byte
	if o != nil {
		lower, upper = o.LowerBound, o.UpperBound
	}
	rs := db.loadReadState()
	if rs == nil {
		return &Iterator{err: ErrClosed, iter: emptyIter{}}
	}
	seq := db.readSeq(snapSeq)
	rd, err := db.iterRangeDels(rs, cf)
	if err != nil {
		rs.unref()
		return &Iterator{err: err, iter: emptyIter{}}
	}
	a := iterAllocPool.Get().(*iterAlloc)
	a.db, a.lower, a.upper = db, lower, upper
	children := a.children[:0]
	mems := a.mems[:]
	addMem := func(t *memtable.MemTable) {
		if len(mems) == 0 {
			children = append(children, t.NewIter(lower, upper))
			return
		}
		t.InitIter(&mems[0], lower, upper)
		children, mems = append(children, &mems[0]), mems[1:]
	}
	if t := rs.mem.table(cf); t != nil {
		addMem(t)
	}
	for i := len(rs.imm) - 1; i >= 0; i-- {
		if t := rs.imm[i].table(cf); t != nil {
			addMem(t)
		}
	}
	copts := compaction.IterOptions{LowerBound: lower, UpperBound: upper}
	it := &Iterator{db: db, cf: cf, seq: seq, lower: lower, upper: upper, rs: rs, alloc: a}
	it.key, it.valueBuf = a.key[:0], a.value[:0]
	if lv := rs.version.Levels(cf); lv != nil {
		children = compaction.AppendLevelIters(children, a.levels[:], lv, a.open, copts)
	}
	a.merging.Init(copts, children...)
	it.iter = &a.merging
	if len(rd) > 0 {
		it.iter = newRangeDelIter(it.iter, rd, seq)
	}
	it.release = rs.unref
	db.openIters.Add(1) // Close takes it back (it.alloc is set)
	return it
}

// iterAlloc holds the parts of an Iterator's stack that NewIter would
// otherwise allocate each time (Pebble's iterAlloc): the merging iterator,
// its children slice and heap, the memtable and level iterators, the
// table opener and the key and value buffers. An Iterator takes one from
// iterAllocPool and puts it back at Close, so a short scan (YCSB E: a new
// iterator, a seek, a few Nexts) allocates little beyond the Iterator.
type iterAlloc struct {
	db           *DB
	lower, upper []byte
	merging      compaction.MergingIter
	children     [12]base.InternalIterator
	levels       [8]compaction.LevelIter
	mems         [3]memtable.Iterator
	open         compaction.TableOpener // a.openTable, bound once
	key, value   []byte
}

var iterAllocPool = sync.Pool{New: func() any {
	a := new(iterAlloc)
	a.open = a.openTable
	return a
}}

func (a *iterAlloc) openTable(f *manifest.FileMetadata) (base.InternalIterator, error) {
	return a.db.openTableIter(f, a.lower, a.upper)
}

// maxPooledBuf bounds the key and value buffers a pooled iterAlloc keeps:
// one scan over a huge value does not pin its copy in the pool.
const maxPooledBuf = 64 << 10

// free returns a to the pool after its Iterator closed its stack, keeping
// the key and value buffers' memory (up to maxPooledBuf each) and
// dropping every reference.
func (a *iterAlloc) free(it *Iterator) {
	a.key, a.value = nil, nil
	if cap(it.key) <= maxPooledBuf {
		a.key = it.key[:0]
	}
	if cap(it.valueBuf) <= maxPooledBuf {
		a.value = it.valueBuf[:0]
	}
	it.key, it.value, it.valueBuf = nil, nil, nil
	a.db, a.lower, a.upper = nil, nil, nil
	clear(a.children[:])
	clear(a.levels[:])
	for i := range a.mems {
		a.mems[i].Recycle() // keeps its run buffer, drops the memtable
	}
	iterAllocPool.Put(a)
}

// tableOpener opens tables through the table cache, for a LevelIter: each
// table iterator is bounded by [lower, upper) (nil = open) and releases its
// table-cache reference on Close.
func (db *DB) tableOpener(lower, upper []byte) compaction.TableOpener {
	return func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		return db.openTableIter(f, lower, upper)
	}
}

// compactionTableOpener opens a compaction's input tables through the table
// cache, each read with sstable.Reader.NewCompactionIter: the inputs pass
// through the block cache without filling it.
func (db *DB) compactionTableOpener() compaction.TableOpener {
	return func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		e, err := db.tables.get(f)
		if err != nil {
			return nil, err
		}
		return e.r.NewIterReleasing(nil, nil, true, e), nil
	}
}

// openTableIter opens table f through the table cache, bounded by [lower,
// upper), releasing the cache's reference on Close (the table entry is
// the iterator's sstable.Releaser).
func (db *DB) openTableIter(f *manifest.FileMetadata, lower, upper []byte) (base.InternalIterator, error) {
	e, err := db.tables.get(f)
	if err != nil {
		return nil, err
	}
	return e.r.NewIterReleasing(lower, upper, false, e), nil
}
