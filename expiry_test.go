package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock a test moves.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func openExpiryDB(t *testing.T, clock *fakeClock, o *Options) *DB {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	o.FS, o.Now = vfs.NewMem(), clock.Now
	db, err := Open("/db", o)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// scanKeys lists the keys an iterator yields forward and backward (each
// direction must agree) with their values and expiries.
func scanKeys(t *testing.T, db *DB) string {
	t.Helper()
	var fwd, bwd []string
	it := db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, fmt.Sprintf("%s=%s@%d", it.Key(), it.Value(), it.Expiry().Unix()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append([]string{fmt.Sprintf("%s=%s@%d", it.Key(), it.Value(), it.Expiry().Unix())}, bwd...)
	}
	require.NoError(t, it.Close())
	require.Equal(t, fwd, bwd, "forward and backward scans differ")
	return fmt.Sprint(fwd)
}

func TestExpiryReads(t *testing.T) {
	clock := newFakeClock()
	db := openExpiryDB(t, clock, &Options{Merger: appendMerger{}})
	dl := clock.Now().Add(10 * time.Second)
	require.NoError(t, db.Put([]byte("a"), []byte("plain"), nil))
	require.NoError(t, db.PutWithExpiry([]byte("b"), []byte("soon"), dl, nil))
	require.NoError(t, db.PutWithExpiry([]byte("c"), []byte("late"), dl.Add(time.Hour), nil))
	require.NoError(t, db.PutWithExpiry([]byte("d"), []byte("base"), dl, nil))
	require.NoError(t, db.Merge([]byte("d"), []byte("op"), nil))
	snap := db.NewSnapshot()
	defer snap.Close()

	check := func(stage string) {
		v, exp, err := db.GetWithExpiry([]byte("b"))
		if clock.Now().Before(dl) {
			require.NoError(t, err, stage)
			require.Equal(t, "soon", string(v), stage)
			require.True(t, exp.Equal(dl), stage)
			v, _ = db.Get([]byte("d"))
			require.Equal(t, "base,op", string(v), stage)
		} else {
			require.ErrorIs(t, err, ErrNotFound, stage)
			_, err = snap.Get([]byte("b"))
			require.ErrorIs(t, err, ErrNotFound, stage+": a snapshot sees the expiry too")
			vals, errs := db.MultiGet([][]byte{[]byte("a"), []byte("b"), []byte("c")})
			require.NoError(t, errs[0])
			require.ErrorIs(t, errs[1], ErrNotFound, stage)
			require.Equal(t, "late", string(vals[2]), stage)
			// Operands written onto an expired base apply to nothing.
			v, exp, err = db.GetWithExpiry([]byte("d"))
			require.NoError(t, err)
			require.Equal(t, "op", string(v), stage)
			require.True(t, exp.IsZero(), stage)
		}
	}
	check("memtable, live")
	require.Equal(t, fmt.Sprintf("[a=plain@%d b=soon@%d c=late@%d d=base,op@%d]",
		time.Time{}.Unix(), dl.Unix(), dl.Add(time.Hour).Unix(), dl.Unix()), scanKeys(t, db))
	require.NoError(t, db.Flush())
	check("table, live")
	clock.Advance(10 * time.Second) // exactly the deadline: expired
	check("table, expired")
	require.Equal(t, fmt.Sprintf("[a=plain@%d c=late@%d d=op@%d]",
		time.Time{}.Unix(), dl.Add(time.Hour).Unix(), time.Time{}.Unix()), scanKeys(t, db))

	// An indexed batch reads through its own expiring Put.
	b := db.NewIndexedBatch()
	require.NoError(t, b.PutWithExpiry([]byte("e"), []byte("x"), clock.Now().Add(-time.Second)))
	_, err := b.Get([]byte("e"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, b.PutWithExpiry([]byte("e"), []byte("y"), clock.Now().Add(time.Second)))
	v, err := b.Get([]byte("e"))
	require.NoError(t, err)
	require.Equal(t, "y", string(v))
}

// TestExpiryCompactionHidesOlder: compaction turns an expired value into
// a Delete, which must keep hiding the older version below it in a level
// the compaction did not read.
func TestExpiryCompactionHidesOlder(t *testing.T) {
	clock := newFakeClock()
	db := openExpiryDB(t, clock, &Options{Merger: appendMerger{}})
	k := []byte("k")
	require.NoError(t, db.Put(k, []byte("old"), nil))
	require.NoError(t, db.Merge([]byte("m"), []byte("old"), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil)) // the old versions go to the bottom
	require.NoError(t, db.PutWithExpiry(k, []byte("new"), clock.Now().Add(time.Minute), nil))
	require.NoError(t, db.PutWithExpiry([]byte("m"), []byte("new"), clock.Now().Add(time.Minute), nil))
	require.NoError(t, db.Merge([]byte("m"), []byte("op"), nil))
	clock.Advance(time.Hour)
	require.NoError(t, db.Flush()) // the flush turns them into Deletes
	require.Positive(t, db.Metrics().Compaction.Expired, "the flush saw the expired values")
	_, err := db.Get(k)
	require.ErrorIs(t, err, ErrNotFound, "the old version came back")
	v, err := db.Get([]byte("m"))
	require.NoError(t, err)
	require.Equal(t, "op", string(v))
	require.NoError(t, db.Compact(nil, nil))
	_, err = db.Get(k)
	require.ErrorIs(t, err, ErrNotFound)
	v, _ = db.Get([]byte("m"))
	require.Equal(t, "op", string(v))
	require.Equal(t, fmt.Sprintf("[m=op@%d]", time.Time{}.Unix()), scanKeys(t, db))
}

// TestExpiryMergeOperands: operands merged onto a live expiring value
// read merged with it, with its deadline, and from the deadline on as
// written onto nothing: the same in the memtable (past its cap), in
// tables and after compactions.
func TestExpiryMergeOperands(t *testing.T) {
	clock := newFakeClock()
	db := openExpiryDB(t, clock, &Options{Merger: appendMerger{}, MaxSuccessiveMerges: 2})
	dl := clock.Now().Add(time.Minute)
	k := []byte("hll")
	require.NoError(t, db.PutWithExpiry(k, []byte("a"), dl, nil))
	for _, op := range []string{"b", "c", "d"} { // past the memtable's cap
		require.NoError(t, db.Merge(k, []byte(op), nil))
	}
	for _, stage := range []string{"memtable", "flushed", "compacted"} {
		v, exp, err := db.GetWithExpiry(k)
		require.NoError(t, err, stage)
		require.Equal(t, "a,b,c,d", string(v), stage)
		require.True(t, exp.Equal(dl), "%s: deadline %v", stage, exp)
		switch stage {
		case "memtable":
			require.NoError(t, db.Flush())
		case "flushed":
			require.NoError(t, db.Compact(nil, nil))
		}
	}
	clock.Advance(time.Minute)
	v, exp, err := db.GetWithExpiry(k)
	require.NoError(t, err)
	require.Equal(t, "b,c,d", string(v))
	require.True(t, exp.IsZero())
	require.NoError(t, db.Compact(nil, nil))
	v, _ = db.Get(k)
	require.Equal(t, "b,c,d", string(v))
}

// prefixFilter removes the keys with its prefix.
type prefixFilter struct {
	prefix []byte
	calls  atomic.Int64
}

func (f *prefixFilter) Filter(key, value []byte, expiry time.Time) bool {
	f.calls.Add(1)
	return bytes.HasPrefix(key, f.prefix)
}

func TestCompactionFilter(t *testing.T) {
	clock := newFakeClock()
	f := &prefixFilter{prefix: []byte("tmp:")}
	db := openExpiryDB(t, clock, &Options{CompactionFilter: f})
	require.NoError(t, db.Put([]byte("tmp:1"), []byte("old"), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	// A snapshot taken now keeps seeing tmp:2: the filter is not asked
	// about what a snapshot can see.
	require.NoError(t, db.Put([]byte("tmp:2"), []byte("x"), nil))
	require.NoError(t, db.Put([]byte("keep"), []byte("y"), nil))
	snap := db.NewSnapshot()
	require.NoError(t, db.Put([]byte("tmp:3"), []byte("z"), nil))
	require.NoError(t, db.Flush())
	v, err := snap.Get([]byte("tmp:2"))
	require.NoError(t, err)
	require.Equal(t, "x", string(v))
	_, err = db.Get([]byte("tmp:3"))
	require.ErrorIs(t, err, ErrNotFound, "the flush removed tmp:3")
	require.NoError(t, snap.Close())
	require.NoError(t, db.Compact(nil, nil))
	for _, k := range []string{"tmp:1", "tmp:2", "tmp:3"} {
		_, err := db.Get([]byte(k))
		require.ErrorIs(t, err, ErrNotFound, k)
	}
	v, err = db.Get([]byte("keep"))
	require.NoError(t, err)
	require.Equal(t, "y", string(v))
	require.Positive(t, f.calls.Load())
	require.GreaterOrEqual(t, db.Metrics().Compaction.Filtered, int64(3))
	it := db.NewIter(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 1, n)
}

// TestExpiryReclaimsDisk: expired values' space goes at the next
// compaction, and the figure is logged.
func TestExpiryReclaimsDisk(t *testing.T) {
	clock := newFakeClock()
	db := openExpiryDB(t, clock, &Options{MemTableSize: 1 << 20})
	val := bytes.Repeat([]byte("v"), 1000)
	const n = 4000
	for i := range n {
		exp := time.Time{}
		if i%4 != 0 { // three in four expire
			exp = clock.Now().Add(time.Duration(1+i%7) * time.Hour)
		}
		require.NoError(t, db.PutWithExpiry(fmt.Appendf(nil, "key%05d", i), val, exp, nil))
	}
	require.NoError(t, db.Compact(nil, nil))
	before := tableBytes(db)
	clock.Advance(8 * time.Hour)
	require.NoError(t, db.Compact(nil, nil))
	after := tableBytes(db)
	t.Logf("tables: %d bytes with 4,000 1 KB values, %d bytes after 3,000 expired and a compaction", before, after)
	require.Less(t, after, before*2/5)
	require.GreaterOrEqual(t, db.Metrics().Compaction.Expired, int64(3000))
	for i := range n {
		_, err := db.Get(fmt.Appendf(nil, "key%05d", i))
		if i%4 == 0 {
			require.NoError(t, err)
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatalf("key%05d: %v, want ErrNotFound", i, err)
		}
	}
}

func tableBytes(db *DB) int64 {
	var n int64
	for _, l := range db.Metrics().Levels {
		n += l.Size
	}
	return n
}

// TestOpenColumnFamilyNilKeepsSettings: a second handle opened with nil
// options leaves the family's CompactionFilter and merge cap in place.
func TestOpenColumnFamilyNilKeepsSettings(t *testing.T) {
	db := openExpiryDB(t, newFakeClock(), nil)
	f := &prefixFilter{prefix: []byte("tmp:")}
	cf, err := db.OpenColumnFamily("c", &ColumnFamilyOptions{CompactionFilter: f, MaxSuccessiveMerges: -1})
	require.NoError(t, err)
	again, err := db.OpenColumnFamily("c", nil)
	require.NoError(t, err)
	require.NoError(t, cf.Put([]byte("tmp:1"), []byte("x"), nil))
	require.NoError(t, again.Compact(nil, nil))
	_, err = cf.Get([]byte("tmp:1"))
	require.ErrorIs(t, err, ErrNotFound, "the filter still applies")
	require.Equal(t, -1, db.mergeCap(cf.id))
}
