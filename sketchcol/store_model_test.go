package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// Compaction equivalence: a random workload of every command runs on the
// Store and on an in-memory model (the phase-1 types, one command at a
// time through their own methods). Every reply must agree; the Store's
// values must equal the model's bytes before compaction, after Flush +
// Compact, and Dump must return identical bytes on both sides of the
// compaction. After the compaction every key is one stored value: reads
// merge nothing, and PFCount of one key is one read answered from the
// HLL's cached cardinality.

// storeModel is the reference: a key's state in memory (nil: missing).
type storeModel map[string]sketch

func (m storeModel) bytes(key string) []byte {
	if c, ok := m[key].(*CuckooFilter); ok {
		return c.pagedDump() // the Store's filters are paged
	}
	if s := m[key]; s != nil {
		return s.appendValue(nil)
	}
	return nil
}

// kindErr is what a command on key expecting kind k must fail with: nil,
// or ErrWrongType.
func (m storeModel) kindErr(key string, want Kind) error {
	if s := m[key]; s != nil && s.Kind() != want {
		return ErrWrongType
	}
	return nil
}

// workload drives one random command on both sides.
type workload struct {
	t   *testing.T
	rng *rand.Rand
	s   *testStore
	m   storeModel
	n   int // commands run
}

func (w *workload) key() string {
	// Keys are named for the kind they usually hold, but a tenth of
	// commands go to a key of another kind.
	fam := []string{"h", "b", "c"}[w.rng.IntN(3)]
	return fmt.Sprintf("%s%d", fam, w.rng.IntN(4))
}

func (w *workload) keyOf(fam string) string {
	if w.rng.IntN(10) == 0 {
		return w.key()
	}
	return fmt.Sprintf("%s%d", fam, w.rng.IntN(4))
}

func (w *workload) items(n int) [][]byte {
	out := make([][]byte, 1+w.rng.IntN(n))
	for i := range out {
		out[i] = fmt.Appendf(nil, "it%d", w.rng.IntN(3000))
	}
	return out
}

// check compares the Store's reply and error with the model's.
func (w *workload) check(name string, got, want any, gotErr, wantErr error) {
	w.t.Helper()
	w.n++
	if wantErr != nil {
		require.ErrorIs(w.t, gotErr, wantErr, "command %d: %s", w.n, name)
	} else {
		require.NoError(w.t, gotErr, "command %d: %s", w.n, name)
	}
	require.Equal(w.t, want, got, "command %d: %s", w.n, name)
}

func (w *workload) step() {
	switch w.rng.IntN(17) {
	case 0, 1:
		w.pfAdd(false)
	case 2:
		w.pfAdd(true)
	case 3:
		w.pfMerge()
	case 4:
		w.pfCount()
	case 5, 6:
		w.bfAdd()
	case 7:
		w.bfAddBlind()
	case 8:
		w.bfReserve()
	case 9:
		w.bfExists()
	case 10, 11:
		w.cfAdd()
	case 12:
		w.cfAddBlind()
	case 13:
		w.cfDel()
	case 14:
		w.cfReserve()
	case 15:
		w.cfQuery()
	case 16:
		w.restore()
	}
}

func (w *workload) pfAdd(blind bool) {
	key, elems := w.keyOf("h"), w.items(20)
	cur := w.m[key]
	if blind {
		require.NoError(w.t, w.s.PFAddBlind(k(key), elems...))
		if cur == nil {
			cur = NewHLL()
			w.m[key] = cur
		}
		if h, ok := cur.(*HLL); ok {
			for _, e := range elems {
				h.Add(e)
			}
		}
		return
	}
	got, err := w.s.PFAdd(k(key), elems...)
	want, wantErr := false, w.m.kindErr(key, KindHLL)
	if wantErr == nil {
		h, _ := cur.(*HLL)
		if h == nil {
			h, want = NewHLL(), true
			w.m[key] = h
		}
		for _, e := range elems {
			want = h.Add(e) || want
		}
	}
	w.check("PFAdd "+key, got, want, err, wantErr)
}

func (w *workload) pfMerge() {
	dst := w.keyOf("h")
	var srcs []string
	for range w.rng.IntN(3) {
		srcs = append(srcs, w.keyOf("h"))
	}
	var bs [][]byte
	for _, s := range srcs {
		bs = append(bs, k(s))
	}
	err := w.s.PFMerge(k(dst), bs...)
	var wantErr error
	for _, key := range append([]string{dst}, srcs...) {
		if e := w.m.kindErr(key, KindHLL); e != nil {
			wantErr = e
		}
	}
	if wantErr == nil {
		union := NewHLL()
		for _, key := range append([]string{dst}, srcs...) {
			if h, ok := w.m[key].(*HLL); ok {
				union.Merge(h)
			}
		}
		w.m[dst] = union
	}
	w.check("PFMerge "+dst, nil, nil, err, wantErr)
}

func (w *workload) pfCount() {
	keys := []string{w.keyOf("h")}
	if w.rng.IntN(3) == 0 {
		keys = append(keys, w.keyOf("h"))
	}
	var bs [][]byte
	var want int64
	var wantErr error
	union := NewHLL()
	for _, key := range keys {
		bs = append(bs, k(key))
		if e := w.m.kindErr(key, KindHLL); e != nil {
			wantErr = e
		} else if h, ok := w.m[key].(*HLL); ok {
			union.Merge(h)
		}
	}
	if wantErr == nil {
		want = union.Count()
	}
	got, err := w.s.PFCount(bs...)
	w.check(fmt.Sprint("PFCount ", keys), got, want, err, wantErr)
}

func (w *workload) bloomFor(key string) (*PagedBloom, error) {
	if err := w.m.kindErr(key, KindBloom); err != nil {
		return nil, err
	}
	if b, ok := w.m[key].(*PagedBloom); ok {
		return b, nil
	}
	b, err := NewPagedBloom(DefaultBloomSpec())
	require.NoError(w.t, err)
	w.m[key] = b
	return b, nil
}

func (w *workload) bfAdd() {
	key, items := w.keyOf("b"), w.items(30)
	got, err := w.s.BFMAdd(k(key), items...)
	var want []bool
	b, wantErr := w.bloomFor(key)
	if wantErr == nil {
		want = []bool{}
		for _, it := range items {
			added, e := b.add(it, false)
			if e != nil {
				wantErr = ErrFilterFull
				break
			}
			want = append(want, added)
		}
	}
	w.check("BFMAdd "+key, got, want, err, wantErr)
}

func (w *workload) bfAddBlind() {
	key, items := w.keyOf("b"), w.items(30)
	require.NoError(w.t, w.s.BFAddBlind(k(key), items...))
	if b, err := w.bloomFor(key); err == nil {
		for _, it := range items {
			_, _ = b.add(it, true)
		}
	}
}

func (w *workload) bfReserve() {
	key := w.keyOf("b")
	o := &BFReserveOptions{Expansion: 1 + w.rng.IntN(3)}
	if w.rng.IntN(3) == 0 {
		o = &BFReserveOptions{NonScaling: true}
	}
	rate, capacity := []float64{0.1, 0.01, 0.001}[w.rng.IntN(3)], int64(10+w.rng.IntN(200))
	err := w.s.BFReserve(k(key), rate, capacity, o)
	wantErr := w.m.kindErr(key, KindBloom)
	switch {
	case wantErr == nil && w.m[key] != nil:
		wantErr = ErrItemExists
	case wantErr == nil:
		spec, e := o.bloomSpec(rate, capacity)
		require.NoError(w.t, e)
		b, e := NewPagedBloom(spec)
		require.NoError(w.t, e)
		w.m[key] = b
	}
	w.check("BFReserve "+key, nil, nil, err, wantErr)
}

func (w *workload) bfExists() {
	key, items := w.keyOf("b"), w.items(30)
	got, err := w.s.BFMExists(k(key), items...)
	var want []bool
	wantErr := w.m.kindErr(key, KindBloom)
	if wantErr == nil {
		want = make([]bool, len(items))
		if b, ok := w.m[key].(*PagedBloom); ok {
			for i, it := range items {
				want[i] = b.Exists(it)
			}
		}
	}
	w.check("BFMExists "+key, got, want, err, wantErr)
	card, err := w.s.BFCard(k(key))
	var wantCard int64
	if b, ok := w.m[key].(*PagedBloom); ok {
		wantCard = b.Card()
	}
	if wantErr != nil {
		wantCard = 0
	}
	w.check("BFCard "+key, card, wantCard, err, wantErr)
}

func (w *workload) cuckooFor(key string) (*CuckooFilter, error) {
	if err := w.m.kindErr(key, KindCuckoo); err != nil {
		return nil, err
	}
	if c, ok := w.m[key].(*CuckooFilter); ok {
		return c, nil
	}
	c, err := NewCuckooFilter(DefaultCuckooSpec())
	require.NoError(w.t, err)
	w.m[key] = c
	return c, nil
}

func (w *workload) cfAdd() {
	key, item := w.keyOf("c"), w.items(1)[0]
	if w.rng.IntN(2) == 0 {
		got, err := w.s.CFAddNX(k(key), item)
		want := false
		c, wantErr := w.cuckooFor(key)
		if wantErr == nil {
			want, wantErr = c.AddNX(item)
			if wantErr != nil {
				wantErr = ErrFilterFull
			}
		}
		w.check("CFAddNX "+key, got, want, err, wantErr)
		return
	}
	got, err := w.s.CFAdd(k(key), item)
	c, wantErr := w.cuckooFor(key)
	if wantErr == nil {
		if wantErr = c.Add(item); wantErr != nil {
			wantErr = ErrFilterFull
		}
	}
	w.check("CFAdd "+key, got, wantErr == nil, err, wantErr)
}

func (w *workload) cfAddBlind() {
	key, items := w.keyOf("c"), w.items(30)
	require.NoError(w.t, w.s.CFAddBlind(k(key), items...))
	if c, err := w.cuckooFor(key); err == nil {
		for _, it := range items {
			applyCuckooRecord(c, cuckooRecord{op: cuckooAdd, hash: itemHash(it)})
		}
	}
}

func (w *workload) cfDel() {
	key, item := w.keyOf("c"), w.items(1)[0]
	got, err := w.s.CFDel(k(key), item)
	want, wantErr := false, w.m.kindErr(key, KindCuckoo)
	if wantErr == nil {
		if c, ok := w.m[key].(*CuckooFilter); ok {
			want = c.Delete(item)
		} else {
			wantErr = sieve.ErrNotFound
		}
	}
	w.check("CFDel "+key, got, want, err, wantErr)
}

func (w *workload) cfReserve() {
	key := w.keyOf("c")
	o := &CFReserveOptions{BucketSize: 1 + w.rng.IntN(4), MaxIterations: 1 + w.rng.IntN(30), Expansion: w.rng.IntN(4)}
	if o.Expansion == 0 {
		o.NonScaling = true
	}
	capacity := int64(2*o.BucketSize + w.rng.IntN(300))
	err := w.s.CFReserve(k(key), capacity, o)
	wantErr := w.m.kindErr(key, KindCuckoo)
	switch {
	case wantErr == nil && w.m[key] != nil:
		wantErr = ErrItemExists
	case wantErr == nil:
		spec, e := o.cuckooSpec(capacity)
		require.NoError(w.t, e)
		c, e := NewCuckooFilter(spec)
		require.NoError(w.t, e)
		w.m[key] = c
	}
	w.check("CFReserve "+key, nil, nil, err, wantErr)
}

func (w *workload) cfQuery() {
	key, item := w.keyOf("c"), w.items(1)[0]
	wantErr := w.m.kindErr(key, KindCuckoo)
	c, _ := w.m[key].(*CuckooFilter)
	var wantN int64
	wantOK := false
	if c != nil && wantErr == nil {
		wantN, wantOK = c.Count(item), c.Exists(item)
	}
	n, err := w.s.CFCount(k(key), item)
	w.check("CFCount "+key, n, wantN, err, wantErr)
	ok, err := w.s.CFExists(k(key), item)
	w.check("CFExists "+key, ok, wantOK, err, wantErr)
}

// restore copies one key's value to another through Dump and Restore.
func (w *workload) restore() {
	src, dst := w.key(), w.key()
	v, err := w.s.Dump(k(src))
	if w.m[src] == nil {
		w.check("Dump "+src, v, []byte(nil), err, sieve.ErrNotFound)
		return
	}
	w.check("Dump "+src, v, w.m.bytes(src), err, nil)
	require.NoError(w.t, w.s.Restore(k(dst), v))
	if d, err := dumpOf(v); d != nil {
		require.NoError(w.t, err)
		w.m[dst] = memPagedOf(d)
		return
	}
	if len(v) > 0 && v[0] == kindPagedCuckooDump {
		c, err := parseCuckooAny(v)
		require.NoError(w.t, err)
		w.m[dst] = c
		return
	}
	s, err := decodeValue(v)
	require.NoError(w.t, err)
	w.m[dst] = s
}

// keys returns the model's keys, sorted.
func (m storeModel) keys() []string {
	var out []string
	for key := range m {
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

func TestStoreCompactionEquivalence(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	// Small memtables so that operands of one key are spread over several
	// tables and levels before the final compaction.
	s := openTestStore(t, &sieve.Options{MemTableSize: 64 << 10, L0CompactionTrigger: 2}, nil)
	w := &workload{t: t, rng: rng, s: s, m: storeModel{}}
	steps := 6000
	if raceEnabled || testing.Short() {
		steps = 1500
	}
	for i := range steps {
		w.step()
		if i%300 == 299 {
			require.NoError(t, s.db.Flush())
		}
	}
	dumps := map[string][]byte{}
	for _, key := range w.m.keys() {
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, w.m.bytes(key), d, "key %s before compaction", key)
		dumps[key] = d
	}

	require.NoError(t, s.db.Flush())
	require.NoError(t, s.ColumnFamily().Compact(nil, nil))
	merges := s.merger.fullMerges.Load()
	for _, key := range w.m.keys() {
		d, err := s.Dump(k(key))
		require.NoError(t, err)
		require.Equal(t, dumps[key], d, "key %s: Dump differs across the compaction", key)
	}
	require.Equal(t, merges, s.merger.fullMerges.Load(), "after compaction every key is one value: reads merge nothing")

	// PFCount of one compacted key: one read, answered from the cache.
	for _, key := range w.m.keys() {
		h, ok := w.m[key].(*HLL)
		if !ok {
			continue
		}
		v, err := s.ColumnFamily().Get(k(key))
		require.NoError(t, err)
		hdr, err := parseHLLHeader(v)
		require.NoError(t, err)
		require.True(t, hdr.cardValid, "compaction stores a valid cache")
		probed := tablesProbed(s.db)
		n, err := s.PFCount(k(key))
		require.NoError(t, err)
		require.Equal(t, h.Count(), n)
		require.Equal(t, hdr.card, n, "the answer is the cached cardinality")
		require.Equal(t, probed+1, tablesProbed(s.db), "one read: one table probed")
	}
	require.Equal(t, merges, s.merger.fullMerges.Load())
	t.Logf("%d commands on %d keys", w.n, len(w.m))
}

// TestStorePFCountReads: before compaction a PFCount of a key with
// operands merges them in the read; after, it reads one value and merges
// nothing.
func TestStorePFCountReads(t *testing.T) {
	s := openTestStore(t, nil, nil)
	for i := range 20 {
		require.NoError(t, s.PFAddBlind(k("h"), fmt.Appendf(nil, "e%d", i)))
	}
	before := s.merger.fullMerges.Load()
	n, err := s.PFCount(k("h"))
	require.NoError(t, err)
	require.Equal(t, int64(20), n)
	require.Equal(t, before+1, s.merger.fullMerges.Load(), "operands merged by the read")

	require.NoError(t, s.ColumnFamily().Compact(nil, nil))
	before = s.merger.fullMerges.Load()
	probed := tablesProbed(s.db)
	n, err = s.PFCount(k("h"))
	require.NoError(t, err)
	require.Equal(t, int64(20), n)
	require.Equal(t, before, s.merger.fullMerges.Load(), "no merge")
	require.Equal(t, probed+1, tablesProbed(s.db), "one read: one table probed")
}

// tablesProbed counts the tables point lookups have probed. (The "one
// read" checks use it rather than PointLookups.Gets, which the engine does
// not count yet.)
func tablesProbed(db *sieve.DB) int64 { return db.Metrics().PointLookups.TablesProbed }
