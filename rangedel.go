package sieve

import (
	"bytes"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/sievedb/sieve/compaction"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/rangedel"
)

// DeleteRange deletes every key in [start, end) of the default column
// family: one write of one sequence number, whatever the number of keys it
// covers (a range tombstone, stored in the WAL, the memtable and then the
// tables; compaction drops the keys it covers and, once nothing below or
// no snapshot needs it, the tombstone). A snapshot taken before it still
// sees the keys. start == end is a no-op; start > end is ErrInvalidRange.
// nil o means NoSync.
func (db *DB) DeleteRange(start, end []byte, o *WriteOptions) error {
	return db.deleteRange(0, start, end, o)
}

// DeleteRange deletes every key in [start, end) of the family (see
// DB.DeleteRange).
func (cf *ColumnFamily) DeleteRange(start, end []byte, o *WriteOptions) error {
	return cf.db.deleteRange(cf.id, start, end, o)
}

// DeleteRangeCF adds a deletion of every key in [start, end) of column
// family cf (see Batch.DeleteRange). Errors are kept as PutCF's.
func (b *Batch) DeleteRangeCF(cf *ColumnFamily, start, end []byte) error {
	if err := b.checkCF(cf); err != nil {
		return err
	}
	return b.addRange(cf.id, start, end)
}

func (db *DB) deleteRange(cf uint32, start, end []byte, o *WriteOptions) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	switch c := bytes.Compare(start, end); {
	case c > 0:
		return fmt.Errorf("%w: start %q > end %q", ErrInvalidRange, start, end)
	case c == 0:
		return nil
	}
	return db.writeOne(base.KindRangeDelete, cf, start, end, o)
}

// RangeDelMetrics count range deletions.
type RangeDelMetrics struct {
	// Written counts range tombstones committed.
	Written int64
	// KeysDropped counts entries flushes and compactions dropped because a
	// range tombstone in the same snapshot stripe covered them.
	KeysDropped int64
	// TombstonesDropped counts range tombstone fragments (per sequence
	// number) that compactions dropped: shadowed by a newer one in the
	// same stripe, or with nothing left below them to delete.
	TombstonesDropped int64
	// TablesDropped counts input tables a compaction dropped whole,
	// without reading them, because a range tombstone covered them.
	TablesDropped int64
}

type rangeDelCounters struct {
	written, keysDropped, tombstonesDropped, tablesDropped atomic.Int64
}

func (c *rangeDelCounters) load() RangeDelMetrics {
	return RangeDelMetrics{Written: c.written.Load(), KeysDropped: c.keysDropped.Load(),
		TombstonesDropped: c.tombstonesDropped.Load(), TablesDropped: c.tablesDropped.Load()}
}

// tableRangeDels returns table f's range tombstones (nil: none), opening
// the table unless f is known to have none.
func (db *DB) tableRangeDels(f *manifest.FileMetadata) (*rangedel.List, error) {
	if f.RangeDels.Load() == manifest.RangeDelsNone {
		return nil, nil
	}
	e, err := db.tables.get(f)
	if err != nil {
		return nil, err
	}
	defer db.tables.release(e)
	l := e.r.RangeDels()
	if l.Empty() {
		f.RangeDels.Store(manifest.RangeDelsNone)
		return nil, nil
	}
	f.RangeDels.Store(manifest.RangeDelsSome)
	return l, nil
}

// versionRangeDels returns the range tombstones of every table of column
// family cf in v, fragmented together (nil: none), computed once per
// version and family.
func (db *DB) versionRangeDels(v *manifest.Version, cf uint32) (*rangedel.List, error) {
	if x, ok := v.RangeDels.Load(cf); ok {
		return x.(*rangedel.List), nil
	}
	var lists []*rangedel.List
	if lv := v.Levels(cf); lv != nil {
		for _, files := range lv {
			for _, f := range files {
				l, err := db.tableRangeDels(f)
				if err != nil {
					return nil, err
				}
				lists = append(lists, l)
			}
		}
	}
	out := rangedel.Merge(lists...)
	v.RangeDels.Store(cf, out)
	return out, nil
}

// iterRangeDels returns the range tombstone lists an iterator over column
// family cf of rs must honour: each memtable's that has any, and the
// version's tables' (collected once per version). None when empty.
func (db *DB) iterRangeDels(rs *readState, cf uint32) ([]*rangedel.List, error) {
	var lists []*rangedel.List
	add := func(l *rangedel.List) {
		if !l.Empty() {
			lists = append(lists, l)
		}
	}
	if t := rs.mem.table(cf); t != nil {
		add(t.RangeDels())
	}
	for _, g := range rs.imm {
		if t := g.table(cf); t != nil {
			add(t.RangeDels())
		}
	}
	vl, err := db.versionRangeDels(rs.version, cf)
	if err != nil {
		return nil, err
	}
	add(vl)
	return lists, nil
}

// rangeDelIter presents the entries a range tombstone deletes (for the
// iterator's reader) as Deletes, so that Iterator's resolution in both
// directions treats them as it treats a point tombstone: hidden, and the
// end of a merge stack.
type rangeDelIter struct {
	base.InternalIterator
	lists []*rangedel.List
	seq   uint64 // the iterator's read sequence number
	// ukey and tomb cache the coverage of the last user key asked about.
	ukey  []byte
	tomb  uint64
	known bool
}

func newRangeDelIter(it base.InternalIterator, lists []*rangedel.List, seq uint64) *rangeDelIter {
	return &rangeDelIter{InternalIterator: it, lists: lists, seq: seq}
}

// Key implements base.InternalIterator.
func (r *rangeDelIter) Key() base.InternalKey {
	k := r.InternalIterator.Key()
	if !r.known || !bytes.Equal(k.UserKey, r.ukey) {
		r.ukey = append(r.ukey[:0], k.UserKey...)
		r.tomb = 0
		for _, l := range r.lists {
			r.tomb = max(r.tomb, l.MaxCovering(k.UserKey, r.seq))
		}
		r.known = true
	}
	if k.SeqNum() < r.tomb {
		k.Trailer = base.MakeTrailer(k.SeqNum(), base.KindDelete)
	}
	return k
}

// inputRangeDels returns the range tombstones of compaction c's input
// tables, fragmented together (nil: none).
func (db *DB) inputRangeDels(c *compaction.Compaction) (*rangedel.List, error) {
	var lists []*rangedel.List
	for _, files := range c.Inputs {
		for _, f := range files {
			l, err := db.tableRangeDels(f)
			if err != nil {
				return nil, err
			}
			lists = append(lists, l)
		}
	}
	return rangedel.Merge(lists...), nil
}

// outputRangeDels returns the range tombstones a flush or compaction with
// options opts writes (nil: none): rangedel.Compact of opts.RangeDels,
// dropping the oldest stripe's where canDrop (nil: never) says nothing
// below holds the range. It counts the tombstones dropped when count is
// set (subcompactions compute it once each and count it once).
func (db *DB) outputRangeDels(opts compaction.GCOptions, canDrop func(start, end []byte) bool, count bool) *rangedel.List {
	if opts.RangeDels == nil {
		return nil
	}
	snaps := slices.Clone(opts.Snapshots)
	slices.Sort(snaps)
	stripe := func(seq uint64) int {
		i, _ := slices.BinarySearch(snaps, seq) // the first snapshot >= seq
		return i
	}
	frags, dropped := rangedel.Compact(opts.RangeDels, stripe, canDrop)
	if count {
		db.metrics.rangeDel.tombstonesDropped.Add(int64(dropped))
	}
	if len(frags) == 0 {
		return nil
	}
	return &rangedel.List{Frags: frags}
}

// nothingBelow reports whether no level of lv below level holds a table
// overlapping [start, end) (tested as [start, end], conservatively).
func nothingBelow(lv *manifest.Levels, level int, start, end []byte) bool {
	for l := level + 1; l < manifest.NumLevels; l++ {
		if len(lv.Overlapping(l, start, end)) > 0 {
			return false
		}
	}
	return true
}

// coveredInputs returns the input tables of c that a range tombstone of
// rd (c's inputs' tombstones) deletes whole, so that the compaction need
// not read them: tables without tombstones of their own whose user-key
// range lies in one fragment that holds a tombstone newer than all their
// entries and in the same snapshot stripe as the oldest of them (so no
// snapshot sees any of them). The GC iterator would drop every entry of
// such a table. It counts them in the metrics.
func (db *DB) coveredInputs(c *compaction.Compaction, rd *rangedel.List, snapshots []uint64) map[uint64]bool {
	if rd == nil {
		return nil
	}
	snaps := slices.Clone(snapshots)
	slices.Sort(snaps)
	stripe := func(seq uint64) int { i, _ := slices.BinarySearch(snaps, seq); return i }
	var skip map[uint64]bool
	for _, files := range c.Inputs {
		for _, f := range files {
			if f.RangeDels.Load() != manifest.RangeDelsNone {
				continue
			}
			i := rd.Find(f.Smallest.UserKey)
			if i < 0 || bytes.Compare(f.Largest.UserKey, rd.Frags[i].End) >= 0 {
				continue
			}
			for _, t := range rd.Frags[i].Seqs {
				if t > f.LargestSeq && stripe(t) == stripe(f.SmallestSeq) {
					if skip == nil {
						skip = map[uint64]bool{}
					}
					skip[f.FileNum] = true
					break
				}
			}
		}
	}
	db.metrics.rangeDel.tablesDropped.Add(int64(len(skip)))
	return skip
}
