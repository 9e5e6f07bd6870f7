package sieve

import (
	"sync/atomic"

	"github.com/sievedb/sieve/memtable"
)

// memGroup is the set of memtables, one per column family, that take the
// writes logged in one WAL file. Groups rotate together: when the mutable
// group is full it becomes immutable, a new WAL starts, and the group waits
// to be flushed into one L0 table per column family.
type memGroup struct {
	logNum uint64
	// filterBits sizes each memtable's key filter (0: none).
	filterBits int64
	// prefix returns a family's prefix function, which its memtable's
	// key filter also holds (nil: none).
	prefix func(cf uint32) prefixFunc
	// tables is indexed by column family ID. It is replaced (copy on write)
	// by the commit leader, the only writer; readers load it atomically.
	tables atomic.Pointer[[]*memtable.MemTable]
	// seeks counts the iterator seeks that merged the group while it was
	// mutable, beside other sources; windowSeq is the visible sequence
	// number at the start of the current window of memSeekWindow of
	// them (stored by the first); flushAsked is set once a window asked for
	// the group's rotation (seekcompact.go).
	seeks      atomic.Int64
	windowSeq  atomic.Uint64
	flushAsked atomic.Bool
}

func newMemGroup(logNum uint64, filterBits int64, prefix func(cf uint32) prefixFunc) *memGroup {
	g := &memGroup{logNum: logNum, filterBits: filterBits, prefix: prefix}
	empty := []*memtable.MemTable{}
	g.tables.Store(&empty)
	return g
}

// table returns the memtable of column family cf, or nil.
func (g *memGroup) table(cf uint32) *memtable.MemTable {
	ts := *g.tables.Load()
	if int(cf) < len(ts) {
		return ts[cf]
	}
	return nil
}

// tableForWrite returns cf's memtable, creating it. REQUIRES: the caller is
// the group's only writer.
func (g *memGroup) tableForWrite(cf uint32) *memtable.MemTable {
	if t := g.table(cf); t != nil {
		return t
	}
	old := *g.tables.Load()
	n := max(len(old), int(cf)+1)
	ts := make([]*memtable.MemTable, n)
	copy(ts, old)
	ts[cf] = memtable.NewWithFilter(g.filterBits)
	if g.prefix != nil {
		pf := g.prefix(cf)
		ts[cf].SetPrefix(pf.fn, pf.name)
	}
	g.tables.Store(&ts)
	return ts[cf]
}

// size is the memory the group's memtables account for: what rotation
// compares with MemTableSize.
func (g *memGroup) size() int64 {
	var n int64
	for _, t := range *g.tables.Load() {
		if t != nil {
			n += t.ApproximateSize()
		}
	}
	return n
}

// merges reports whether the group holds entries of column family cf (an
// iterator over cf merges its memtable).
func (g *memGroup) merges(cf uint32) bool {
	t := g.table(cf)
	return t != nil && !t.Empty()
}

// empty reports whether no write went into the group.
func (g *memGroup) empty() bool {
	for _, t := range *g.tables.Load() {
		if t != nil && !t.Empty() {
			return false
		}
	}
	return true
}

// all returns the group's non-empty memtables with their column family
// IDs, in ID order (so that a flush numbers its tables deterministically).
func (g *memGroup) all() []cfMemTable {
	var out []cfMemTable
	for id, t := range *g.tables.Load() {
		if t != nil && !t.Empty() {
			out = append(out, cfMemTable{uint32(id), t})
		}
	}
	return out
}

// cfMemTable is one column family's memtable in a group.
type cfMemTable struct {
	cf uint32
	t  *memtable.MemTable
}

// memFilterBits is the size of each memtable's key filter: MemTableSize ×
// memtable.FilterBitsPerByte.
func (db *DB) memFilterBits() int64 {
	return int64(float64(db.opts.MemTableSize) * memtable.FilterBitsPerByte)
}
