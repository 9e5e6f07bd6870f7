package sketchcol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// cuckooModelRun drives paged cuckoo filters through the Store and the
// in-memory CuckooFilter side by side: every reply, CF.INFO and Dump
// must agree, through flushes, compactions and reopens.
type cuckooModelRun struct {
	t     *testing.T
	rng   *rand.Rand
	fs    *vfs.MemFS
	db    *sieve.DB
	s     *Store
	model map[string]*CuckooFilter
	step  int
}

func (r *cuckooModelRun) open() {
	db, err := sieve.Open("/db", &sieve.Options{FS: r.fs})
	require.NoError(r.t, err)
	s, err := Open(db)
	require.NoError(r.t, err)
	r.db, r.s = db, s
}

func (r *cuckooModelRun) item() []byte {
	return fmt.Appendf(nil, "i%d", r.rng.IntN(3000))
}

// keys: "small" (default geometry), "grow" (small buckets, grows often),
// "wide" (64-slot buckets over several pages once it has grown).
var cuckooModelSpecs = map[string]CuckooSpec{
	"small": DefaultCuckooSpec(),
	"grow":  {Capacity: 16, BucketSize: 2, MaxIterations: 5, Expansion: 2},
	"wide":  {Capacity: 128, BucketSize: 64, MaxIterations: 3, Expansion: 8},
}

func (r *cuckooModelRun) reserveAll() {
	for key, spec := range cuckooModelSpecs {
		o := &CFReserveOptions{BucketSize: spec.BucketSize, MaxIterations: spec.MaxIterations, Expansion: spec.Expansion}
		require.NoError(r.t, r.s.CFReserve(k(key), spec.Capacity, o))
		c, err := NewCuckooFilter(spec)
		require.NoError(r.t, err)
		r.model[key] = c
	}
}

func (r *cuckooModelRun) pick() (string, *CuckooFilter) {
	keys := []string{"small", "grow", "wide"}
	key := keys[r.rng.IntN(len(keys))]
	return key, r.model[key]
}

// addOne is CF.ADD or CF.ADDNX of one item on both sides.
func (r *cuckooModelRun) addOne(key string, c *CuckooFilter) {
	it := r.item()
	if r.rng.IntN(2) == 0 {
		got, err := r.s.CFAddNX(k(key), it)
		want, werr := c.AddNX(it)
		require.Equal(r.t, werr == nil, err == nil, "step %d CFAddNX %s: %v", r.step, key, err)
		require.Equal(r.t, want, got, "step %d CFAddNX %s %s", r.step, key, it)
		return
	}
	got, err := r.s.CFAdd(k(key), it)
	werr := c.Add(it)
	require.Equal(r.t, werr == nil, err == nil, "step %d CFAdd %s: %v", r.step, key, err)
	require.Equal(r.t, werr == nil, got, "step %d CFAdd %s", r.step, key)
}

// addMany is a bulk add (CFAddBlind, or a Batch) of up to 300 items.
func (r *cuckooModelRun) addMany(key string, c *CuckooFilter) {
	items := make([][]byte, 1+r.rng.IntN(300))
	for i := range items {
		items[i] = r.item()
	}
	if r.rng.IntN(2) == 0 {
		require.NoError(r.t, r.s.CFAddBlind(k(key), items...))
	} else {
		b := r.s.NewBatch()
		half := len(items) / 2
		require.NoError(r.t, b.CFAdd(k(key), items[:half]...))
		require.NoError(r.t, b.CFAdd(k(key), items[half:]...))
		require.NoError(r.t, b.Commit(nil))
	}
	for _, it := range items {
		applyCuckooRecord(c, cuckooRecord{op: cuckooAdd, hash: itemHash(it)})
	}
}

func (r *cuckooModelRun) query(key string, c *CuckooFilter) {
	it := r.item()
	switch r.rng.IntN(3) {
	case 0:
		got, err := r.s.CFDel(k(key), it)
		require.NoError(r.t, err)
		require.Equal(r.t, c.Delete(it), got, "step %d CFDel %s %s", r.step, key, it)
	case 1:
		got, err := r.s.CFCount(k(key), it)
		require.NoError(r.t, err)
		require.Equal(r.t, c.Count(it), got, "step %d CFCount %s %s", r.step, key, it)
	default:
		probe := [][]byte{it, r.item(), r.item()}
		got, err := r.s.CFMExists(k(key), probe...)
		require.NoError(r.t, err)
		require.Equal(r.t, existsAll(c.Exists, probe), got, "step %d CFMExists %s", r.step, key)
	}
}

// checkAll compares CF.INFO and Dump of every key with the model.
func (r *cuckooModelRun) checkAll(what string) {
	for key, c := range r.model {
		info, err := r.s.CFInfo(k(key))
		require.NoError(r.t, err)
		require.Equal(r.t, c.Info(), info, "%s: step %d CFInfo %s", what, r.step, key)
		d, err := r.s.Dump(k(key))
		require.NoError(r.t, err)
		require.True(r.t, bytes.Equal(c.pagedDump(), d), "%s: step %d Dump %s", what, r.step, key)
	}
}

// maintain flushes, compacts or reopens, now and then.
func (r *cuckooModelRun) maintain() {
	switch r.rng.IntN(40) {
	case 0:
		require.NoError(r.t, r.db.Flush())
	case 1:
		require.NoError(r.t, r.db.Compact(nil, nil))
	case 2:
		r.checkAll("before reopen")
		require.NoError(r.t, r.db.Close())
		r.open()
		r.checkAll("after reopen")
	}
}

// TestPagedCuckooModel: random CF.ADD, ADDNX, DEL, EXISTS, COUNT and bulk
// adds on paged filters against the in-memory filter, with flushes,
// compactions and reopens in between; replies, CF.INFO and Dump agree.
func TestPagedCuckooModel(t *testing.T) {
	r := &cuckooModelRun{t: t, rng: rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 7)),
		fs: vfs.NewMem(), model: map[string]*CuckooFilter{}}
	r.open()
	defer func() { _ = r.db.Close() }()
	r.reserveAll()
	for r.step = range 1500 {
		key, c := r.pick()
		switch n := r.rng.IntN(20); {
		case n < 8:
			r.addOne(key, c)
		case n < 10:
			r.addMany(key, c)
		default:
			r.query(key, c)
		}
		r.maintain()
		if r.step%100 == 0 {
			r.checkAll("periodic")
		}
	}
	r.checkAll("end")
	wide, _ := r.s.CFInfo(k("wide"))
	t.Logf("wide: %d sub-filters, %d items; grow: %d sub-filters", wide.NumFilters, wide.NumItemsInserted, r.model["grow"].Info().NumFilters)
}

// TestPagedCuckooLegacyValue: a cuckoo value stored whole (kind 0x30, as
// an earlier version wrote it) keeps working: every command, Dump and
// Restore take its old path, and it stays one value.
func TestPagedCuckooLegacyValue(t *testing.T) {
	s := openTestStore(t, nil, nil)
	spec := CuckooSpec{Capacity: 64, BucketSize: 2, MaxIterations: 10, Expansion: 2}
	c, err := NewCuckooFilter(spec)
	require.NoError(t, err)
	for i := range 40 {
		require.NoError(t, c.Add(fmt.Appendf(nil, "old%d", i)))
	}
	v, err := c.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, s.cf.Put(k("old"), v, nil)) // the old way: one value

	ok, err := s.CFAdd(k("old"), k("new"))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, c.Add(k("new")))
	added, err := s.CFAddNX(k("old"), k("old3"))
	require.NoError(t, err)
	require.False(t, added)
	found, err := s.CFDel(k("old"), k("old7"))
	require.NoError(t, err)
	require.True(t, found)
	c.Delete(k("old7"))
	require.NoError(t, s.CFAddBlind(k("old"), k("blind")))
	require.NoError(t, c.Add(k("blind")))
	b := s.NewBatch()
	require.NoError(t, b.CFAdd(k("old"), k("batch")))
	require.NoError(t, b.Commit(nil))
	require.NoError(t, c.Add(k("batch")))

	for _, it := range ks("old0", "old7", "new", "blind", "batch", "never") {
		in, err := s.CFExists(k("old"), it)
		require.NoError(t, err)
		require.Equal(t, c.Exists(it), in, "%s", it)
		n, err := s.CFCount(k("old"), it)
		require.NoError(t, err)
		require.Equal(t, c.Count(it), n, "%s", it)
	}
	info, err := s.CFInfo(k("old"))
	require.NoError(t, err)
	require.Equal(t, c.Info(), info)
	d, err := s.Dump(k("old"))
	require.NoError(t, err)
	want, _ := c.MarshalBinary()
	require.Equal(t, want, d, "still one value of kind 0x30")
	require.NoError(t, s.Restore(k("copy"), d))
	next, chunk, err := s.CFScanDump(k("old"), 0)
	require.NoError(t, err)
	require.Equal(t, want, chunk)
	next, _, err = s.CFScanDump(k("old"), next)
	require.NoError(t, err)
	require.Zero(t, next, "one chunk")
}

// TestPagedCuckooDumpRestoreScan: a paged filter round-trips through
// Dump and Restore and through CF.SCANDUMP / CF.LOADCHUNK in several
// chunks, and keeps answering; a deleted key leaves no page behind.
func TestPagedCuckooDumpRestoreScan(t *testing.T) {
	s := openTestStore(t, nil, nil)
	key := k("cf")
	require.NoError(t, s.CFReserve(key, 200_000, &CFReserveOptions{BucketSize: 4}))
	items := make([][]byte, 20_000)
	for i := range items {
		items[i] = fmt.Appendf(nil, "item%d", i)
	}
	require.NoError(t, s.CFAddBlind(key, items...))
	d, err := s.Dump(key)
	require.NoError(t, err)
	require.Equal(t, byte(kindPagedCuckooDump), d[0])
	require.NoError(t, s.Restore(k("restored"), d))
	d2, err := s.Dump(k("restored"))
	require.NoError(t, err)
	require.Equal(t, d, d2)

	chunks := 0
	for iter := int64(0); ; chunks++ {
		next, chunk, err := s.CFScanDump(key, iter)
		require.NoError(t, err)
		if next == 0 {
			break
		}
		require.NoError(t, s.CFLoadChunk(k("loaded"), next, chunk))
		iter = next
	}
	require.Greater(t, chunks, 2, "the header and several chunks of pages")
	d3, err := s.Dump(k("loaded"))
	require.NoError(t, err)
	require.Equal(t, d, d3)
	in, err := s.CFMExists(k("loaded"), items[0], items[19_999])
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, in, "added items are there")

	require.NoError(t, s.Delete(key))
	start, end := pageRange(key)
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: start, UpperBound: end})
	require.False(t, it.First(), "Delete drops the pages")
	require.NoError(t, it.Close())
	require.ErrorIs(t, s.Restore(k("bad"), d[:len(d)-1]), ErrCorruption)
}

// TestPagedCuckooLargeReserveSmallOnDisk: a filter reserved for 100M
// items (a 128 MiB single value before paging) holding a few thousand
// items takes a few MB on disk: pages never written cost nothing.
func TestPagedCuckooLargeReserveSmallOnDisk(t *testing.T) {
	dir := t.TempDir()
	db, err := sieve.Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	s, err := Open(db)
	require.NoError(t, err)
	key := k("big")
	require.NoError(t, s.CFReserve(key, 100_000_000, nil))
	items := make([][]byte, 3000)
	for i := range items {
		items[i] = fmt.Appendf(nil, "x%d", i)
	}
	require.NoError(t, s.CFAddBlind(key, items[:1000]...))
	for _, it := range items[1000:] {
		ok, err := s.CFAdd(key, it)
		require.NoError(t, err)
		require.True(t, ok)
	}
	in, err := s.CFMExists(key, items...)
	require.NoError(t, err)
	require.NotContains(t, in, false)
	info, err := s.CFInfo(key)
	require.NoError(t, err)
	require.Equal(t, int64(1)<<26, info.NumBuckets)
	require.Equal(t, int64(3000), info.NumItemsInserted)
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	size := dirSize(t, dir)
	t.Logf("reserved 100M, 3000 items: data directory %d KB", size>>10)
	require.Less(t, size, int64(8<<20), "a few MB, not the 128 MiB of a whole filter")
}

// cuckooFuzzSeeds are valid header, header operand, page, page operand
// and dump bytes.
func cuckooFuzzSeeds(t testing.TB) [][]byte {
	c, err := NewCuckooFilter(CuckooSpec{Capacity: 8, BucketSize: 2, MaxIterations: 4, Expansion: 2})
	require.NoError(t, err)
	for i := range 40 {
		applyCuckooRecord(c, cuckooRecord{op: cuckooAdd, hash: itemHash([]byte{byte(i)})})
	}
	d := c.pagedDump()
	h, err := parseCuckooDump(d)
	require.NoError(t, err)
	spec := DefaultCuckooSpec()
	return [][]byte{
		d, h.raw,
		appendPagedCuckooOp(nil, &pagedCuckooOp{spec: &spec, layers: 2, deletes: 1, items: []int64{3, -1}}),
		appendPagedCuckooOp(nil, &pagedCuckooOp{layers: 1, dropped: 2, items: []int64{1}}),
		appendPagedCuckooOp(nil, &pagedCuckooOp{drain: 3, appends: []uint64{7, 1 << 40}}),
		append([]byte{kindCuckooPage, version1}, 0, 7, 0, 9),
		appendCuckooPageOp(nil, 4, []slotWrite{{0, 3}, {3, 0}, {0, 5}}),
	}
}

// FuzzPagedCuckooDecode: the paged cuckoo filter's decoders (header,
// header operand, dump, page operand) and the page merger on any bytes:
// no panic, errors wrap ErrCorruption, valid bytes re-encode to
// themselves, a partial merge agrees with applying the operands.
func FuzzPagedCuckooDecode(f *testing.F) {
	for _, s := range cuckooFuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := parsePagedCuckoo(data); err == nil {
			require.Equal(t, data, h.appendValue(nil), "a valid header re-encodes to itself")
			_ = h.info()
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if o, err := decodePagedCuckooOp(data); err == nil {
			require.Equal(t, data, appendPagedCuckooOp(nil, o.(*pagedCuckooOp)), "a valid operand re-encodes to itself")
			s, err := o.create()
			require.NoError(t, err)
			o.apply(s)
			_, err = parsePagedCuckoo(s.appendValue(nil))
			require.NoError(t, err, "an operand applied leaves a valid header")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if d, err := parseCuckooDump(data); err == nil {
			if len(d.header.pending) == 0 {
				require.Equal(t, data, d.filter().pagedDump(), "a valid dump re-encodes to itself")
			}
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		if n, ws, err := decodeCuckooPageOp(data); err == nil {
			require.Equal(t, data, appendCuckooPageOp(nil, n, ws), "a valid page operand re-encodes to itself")
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
		fuzzCuckooPageMerge(t, data)
	})
}

func fuzzCuckooPageMerge(t *testing.T, data []byte) {
	m := PageMerger{}
	if len(data) > 0 && data[0] == kindCuckooPage {
		if v, err := m.FullMerge([]byte("k"), data, true, nil); err == nil {
			_, err := cuckooSlotsOf(v)
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, ErrCorruption)
		}
	}
	ops := [][]byte{data, appendCuckooPageOp(nil, 4, []slotWrite{{1, 2}})}
	if v, ok := m.PartialMerge([]byte("k"), ops); ok {
		whole, err := m.FullMerge([]byte("k"), nil, false, ops)
		require.NoError(t, err)
		folded, err := m.FullMerge([]byte("k"), nil, false, [][]byte{v})
		require.NoError(t, err)
		require.Equal(t, whole, folded, "a partial merge changes nothing")
	}
}

// TestPagedCuckooView: cuckoo commands in a transaction (WithBatch) read
// their own header and page writes, created filter included; the DB sees
// them once the batch is applied.
func TestPagedCuckooView(t *testing.T) {
	ts := openTestStore(t, nil, nil)
	st := ts.Store
	b := ts.db.NewIndexedBatch()
	v := st.WithBatch(b)
	require.NoError(t, v.CFReserve(k("cf"), 1000, nil))
	for _, it := range ks("a", "b", "a") {
		ok, err := v.CFAdd(k("cf"), it)
		require.NoError(t, err)
		require.True(t, ok)
	}
	added, err := v.CFAddNX(k("cf"), k("b"))
	require.NoError(t, err)
	require.False(t, added, "the view reads its own pages")
	n, err := v.CFCount(k("cf"), k("a"))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	found, err := v.CFDel(k("cf"), k("a"))
	require.NoError(t, err)
	require.True(t, found)
	_, err = st.CFInfo(k("cf"))
	require.ErrorIs(t, err, sieve.ErrNotFound, "nothing in the DB before Apply")

	require.NoError(t, st.Apply(b, nil))
	info, err := st.CFInfo(k("cf"))
	require.NoError(t, err)
	require.EqualValues(t, 2, info.NumItemsInserted)
	require.EqualValues(t, 1, info.NumItemsDeleted)
	in, err := st.CFMExists(k("cf"), ks("a", "b")...)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, in)
}

// TestPagedCuckooScale measures CF.ADD and CF.EXISTS through the Store,
// one command at a time, on a filter reserved for 100M items with
// SIEVE_CUCKOO_SCALE items added (default 1,000,000), beside one
// reserved for 1M with half as many (at most 500,000): p50 and p99 of
// each, ops/s, and the data directory's size. It runs only when asked.
func TestPagedCuckooScale(t *testing.T) {
	fill := os.Getenv("SIEVE_CUCKOO_SCALE")
	if fill == "" {
		t.Skip("set SIEVE_CUCKOO_SCALE")
	}
	n, err := strconv.ParseInt(fill, 10, 64)
	if err != nil || n < 1 {
		n = 1_000_000
	}
	dir := t.TempDir()
	db, err := sieve.Open(dir, scaleOptions())
	require.NoError(t, err)
	defer db.Close()
	st, err := Open(db)
	require.NoError(t, err)
	for _, f := range []struct {
		key      string
		capacity int64
		fill     int64
	}{{"small", 1_000_000, min(n/2, 500_000)}, {"large", 100_000_000, n}} {
		key := []byte(f.key)
		require.NoError(t, st.CFReserve(key, f.capacity, nil))
		start := time.Now()
		batch := make([][]byte, 0, 1000)
		for i := int64(0); i < f.fill; i++ {
			batch = append(batch, fmt.Appendf(nil, "%s-%d", f.key, i))
			if len(batch) == cap(batch) || i == f.fill-1 {
				require.NoError(t, st.CFAddBlind(key, batch...))
				batch = batch[:0]
			}
		}
		load := time.Since(start)
		require.NoError(t, db.Flush())
		add := timeOps(t, 20000, func(i int) error {
			_, err := st.CFAdd(key, fmt.Appendf(nil, "new-%s-%d", f.key, i))
			return err
		})
		exists := timeOps(t, 20000, func(i int) error {
			_, err := st.CFExists(key, fmt.Appendf(nil, "%s-%d", f.key, int64(i)*7919%f.fill))
			return err
		})
		info, _ := st.CFInfo(key)
		t.Logf("%s: reserved %d, %d items (loaded by CFAddBlind of 1000 in %v, %.0f items/s); CF.ADD %s; CF.EXISTS %s; CF.INFO size %d MB, %d sub-filters, %d dropped",
			f.key, f.capacity, f.fill, load.Round(time.Millisecond), float64(f.fill)/load.Seconds(), add, exists, info.Size>>20, info.NumFilters, info.ItemsDropped)
	}
	require.NoError(t, db.Compact(nil, nil))
	t.Logf("after a full compaction: data directory %d MB", dirSize(t, dir)>>20)
}

// TestPagedCuckooPagesReplaced: a paged cuckoo filter's key replaced by a
// Put (which drops no pages) and then made a Bloom filter: the cuckoo
// pages left behind read as zeros and are replaced by the Bloom pages,
// whether compacted into values or still operands; and the other way
// round, a cuckoo filter created over a Bloom filter's pages drops them.
func TestPagedCuckooPagesReplaced(t *testing.T) {
	for _, compact := range []bool{false, true} {
		s := openTestStore(t, nil, nil)
		items := make([][]byte, 2000)
		for i := range items {
			items[i] = fmt.Appendf(nil, "it%d", i)
		}
		require.NoError(t, s.CFReserve(k("k"), 100, &CFReserveOptions{BucketSize: 4, Expansion: 2}))
		require.NoError(t, s.CFAddBlind(k("k"), items...))
		if compact {
			require.NoError(t, s.db.Compact(nil, nil))
		}
		require.NoError(t, s.Put(k("k"), []byte{0})) // a string, as sieve-server's SET
		require.NoError(t, s.cf.Delete(k("k"), nil))
		require.NoError(t, s.BFReserve(k("k"), 0.01, 10000, nil))
		_, err := s.BFMAdd(k("k"), items[:500]...)
		require.NoError(t, err)
		in, err := s.BFMExists(k("k"), items[:500]...)
		require.NoError(t, err)
		require.NotContains(t, in, false)
		n, err := s.BFCard(k("k"))
		require.NoError(t, err)
		require.EqualValues(t, 500, n)
		require.NoError(t, s.db.Compact(nil, nil))
		_, err = s.Dump(k("k"))
		require.NoError(t, err)
		in, err = s.BFMExists(k("k"), items[:500]...)
		require.NoError(t, err)
		require.NotContains(t, in, false, "after a compaction (compact before: %v)", compact)

		require.NoError(t, s.Put(k("k"), []byte{0}))
		require.NoError(t, s.cf.Delete(k("k"), nil))
		require.NoError(t, s.CFReserve(k("k"), 100, nil))
		info, err := s.CFInfo(k("k"))
		require.NoError(t, err)
		require.Zero(t, info.NumItemsInserted)
		for _, it := range items[:50] {
			c, err := s.CFCount(k("k"), it)
			require.NoError(t, err)
			require.Zero(t, c, "no Bloom page is read as fingerprints")
		}
		require.NoError(t, s.db.Compact(nil, nil))
		_, err = s.Dump(k("k"))
		require.NoError(t, err)
	}
}

// TestPagedCuckooConcurrentBatch: Batches adding blind, CFAdd and CFDel
// through the Store, all at once on one paged filter: no add is lost or
// counted twice, and the header's counts match the pages.
func TestPagedCuckooConcurrentBatch(t *testing.T) {
	s := openTestStore(t, nil, nil)
	key := k("cf")
	require.NoError(t, s.CFReserve(key, 100_000, nil))
	const workers, per = 8, 300
	done := make(chan error, workers)
	for g := range workers {
		go func() {
			done <- func() error {
				for i := range per {
					it := fmt.Appendf(nil, "g%d-%d", g, i)
					switch {
					case g%2 == 0:
						b := s.NewBatch()
						if err := b.CFAdd(key, it); err != nil {
							return err
						}
						if err := b.Commit(nil); err != nil {
							return err
						}
					case i%3 == 2: // add and delete again
						if _, err := s.CFAdd(key, it); err != nil {
							return err
						}
						if found, err := s.CFDel(key, it); err != nil || !found {
							return fmt.Errorf("CFDel %s: %v, %v", it, found, err)
						}
					default:
						if _, err := s.CFAdd(key, it); err != nil {
							return err
						}
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		require.NoError(t, <-done)
	}
	want := int64(workers/2*per + workers/2*(per-per/3))
	info, err := s.CFInfo(key)
	require.NoError(t, err)
	require.Equal(t, want, info.NumItemsInserted)
	d, err := s.Dump(key) // drains the pending adds; checks counts against pages
	require.NoError(t, err)
	_, err = parseCuckooDump(d)
	require.NoError(t, err)
	for g := range workers {
		for i := range per {
			if g%2 == 1 && i%3 == 2 {
				continue
			}
			in, err := s.CFExists(key, fmt.Appendf(nil, "g%d-%d", g, i))
			require.NoError(t, err)
			require.True(t, in, "g%d-%d", g, i)
		}
	}
}
