package sieve

import (
	"sync"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
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
	var children []base.InternalIterator
	if t := rs.mem.table(cf); t != nil {
		children = append(children, t.NewIter(lower, upper))
	}
	for i := len(rs.imm) - 1; i >= 0; i-- {
		if t := rs.imm[i].table(cf); t != nil {
			children = append(children, t.NewIter(lower, upper))
		}
	}
	copts := compaction.IterOptions{LowerBound: lower, UpperBound: upper}
	it := &Iterator{db: db, cf: cf, seq: seq, lower: lower, upper: upper, rs: rs}
	if lv := rs.version.Levels(cf); lv != nil {
		children = compaction.LevelIters(children, lv, db.tableOpener(lower, upper), copts)
	}
	it.iter = compaction.NewMergingIter(copts, children...)
	if len(rd) > 0 {
		it.iter = newRangeDelIter(it.iter, rd, seq)
	}
	it.release = rs.unref
	return it
}

// tableOpener opens tables through the table cache, for a LevelIter: each
// table iterator is bounded by [lower, upper) (nil = open) and releases its
// table-cache reference on Close.
func (db *DB) tableOpener(lower, upper []byte) compaction.TableOpener {
	return func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		e, err := db.tables.get(f)
		if err != nil {
			return nil, err
		}
		return newTableIter(db, e, e.r.NewIter(lower, upper)), nil
	}
}

// tableIter releases its table-cache reference on Close.
type tableIter struct {
	base.InternalIterator
	db     *DB
	e      *tableEntry
	closed bool
}

var tableIterPool = sync.Pool{New: func() any { return new(tableIter) }}

func newTableIter(db *DB, e *tableEntry, it base.InternalIterator) *tableIter {
	t := tableIterPool.Get().(*tableIter)
	*t = tableIter{InternalIterator: it, db: db, e: e}
	return t
}

func (t *tableIter) Close() error {
	if t.closed {
		return nil
	}
	err := t.InternalIterator.Close()
	t.closed = true
	t.db.tables.release(t.e)
	*t = tableIter{closed: true}
	tableIterPool.Put(t)
	return err
}
