package compaction

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/memtable"
	"github.com/sievedb/sieve/sstable"
	"github.com/stretchr/testify/require"
)

// buildTable writes es (sorted) into an in-memory sstable with small blocks.
func buildTable(t testing.TB, num uint64, es []entry) *sstable.Reader {
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, sstable.WriterOptions{BlockSize: 64, Compression: sstable.NoCompression})
	for _, e := range es {
		require.NoError(t, w.Add(e.key, e.value))
	}
	_, err := w.Finish()
	require.NoError(t, err)
	r, err := sstable.NewReader(testutil.NewMemFile(buf.Bytes()), int64(buf.Len()), sstable.ReaderOptions{FileNum: num})
	require.NoError(t, err)
	return r
}

// iterModel is the sorted-slice model of an internal iterator with bounds.
type iterModel struct {
	es    []entry // within bounds, sorted
	pos   int
	valid bool
}

func newIterModel(all []entry, lower, upper []byte) *iterModel {
	m := &iterModel{}
	for _, e := range all {
		uk := e.key.UserKey
		if (lower != nil && bytes.Compare(uk, lower) < 0) || (upper != nil && bytes.Compare(uk, upper) >= 0) {
			continue
		}
		m.es = append(m.es, e)
	}
	sortEntries(m.es)
	return m
}

func (m *iterModel) set(pos int) bool {
	m.pos, m.valid = pos, pos >= 0 && pos < len(m.es)
	return m.valid
}

func (m *iterModel) seekGE(k []byte) int {
	return sort.Search(len(m.es), func(i int) bool { return bytes.Compare(m.es[i].key.UserKey, k) >= 0 })
}

func (m *iterModel) do(op string, k []byte) bool {
	switch op {
	case "first":
		return m.set(0)
	case "last":
		return m.set(len(m.es) - 1)
	case "seek-ge":
		return m.set(m.seekGE(k))
	case "seek-lt":
		return m.set(m.seekGE(k) - 1)
	case "next":
		return m.valid && m.set(m.pos+1)
	case "prev":
		return m.valid && m.set(m.pos-1)
	}
	panic(op)
}

func doOp(it base.InternalIterator, op string, k []byte) bool {
	switch op {
	case "first":
		return it.First()
	case "last":
		return it.Last()
	case "seek-ge":
		return it.SeekGE(k)
	case "seek-lt":
		return it.SeekLT(k)
	case "next":
		return it.Next()
	case "prev":
		return it.Prev()
	}
	panic(op)
}

// randomKey returns a user key from a pool of n keys, or (1 time in 8) a
// key between or beyond them.
func randomKey(rng *rand.Rand, n int) []byte {
	k := fmt.Sprintf("k%03d", rng.Intn(n+2))
	if rng.Intn(8) == 0 {
		k += "x"
	}
	return []byte(k)
}

var kinds = []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindMerge}

// randomEntries returns n entries over nKeys user keys with unique seqnums.
func randomEntries(rng *rand.Rand, n, nKeys int) []entry {
	seqs := rng.Perm(n)
	es := make([]entry, n)
	for i := range es {
		seq := uint64(seqs[i] + 1)
		es[i] = entry{
			key:   base.MakeInternalKey([]byte(fmt.Sprintf("k%03d", rng.Intn(nKeys))), seq, kinds[rng.Intn(len(kinds))]),
			value: []byte(fmt.Sprintf("v%d", seq)),
		}
	}
	return es
}

// splitFiles cuts sorted entries into tables at user-key boundaries.
func splitFiles(rng *rand.Rand, es []entry) [][]entry {
	var files [][]entry
	start := 0
	for i := 1; i <= len(es); i++ {
		boundary := i == len(es) || !bytes.Equal(es[i].key.UserKey, es[i-1].key.UserKey)
		if boundary && (i == len(es) || rng.Intn(4) == 0) {
			files = append(files, es[start:i])
			start = i
		}
	}
	return files
}

// levelOf returns file metadata for tables and an opener that serves them,
// either as sliceIters or as sstable iterators, counting open tables.
func levelOf(t testing.TB, rng *rand.Rand, tables [][]entry, useSST bool, open *int) ([]*manifest.FileMetadata, TableOpener) {
	var files []*manifest.FileMetadata
	readers := map[uint64]*sstable.Reader{}
	data := map[uint64][]entry{}
	for i, es := range tables {
		num := uint64(i + 1)
		files = append(files, &manifest.FileMetadata{FileNum: num, Smallest: es[0].key, Largest: es[len(es)-1].key})
		data[num] = es
		if useSST {
			readers[num] = buildTable(t, num, es)
		}
	}
	opener := func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		*open++
		if *open > 1 {
			t.Errorf("level iterator holds %d tables open", *open)
		}
		var it base.InternalIterator
		if useSST {
			it = readers[f.FileNum].NewIter(nil, nil)
		} else {
			it = newSliceIter(data[f.FileNum])
		}
		return &closeCounter{InternalIterator: it, open: open}, nil
	}
	return files, opener
}

type closeCounter struct {
	base.InternalIterator
	open *int
}

func (c *closeCounter) Close() error {
	*c.open--
	return c.InternalIterator.Close()
}

// randomChild wraps es (sorted) in one of the InternalIterator
// implementations a MergingIter meets in sieve.
func randomChild(t testing.TB, rng *rand.Rand, es []entry, opts IterOptions, open *[]*int) (base.InternalIterator, string) {
	switch rng.Intn(5) {
	case 0:
		s := newSliceIter(es)
		if rng.Intn(2) == 0 {
			s.lower, s.upper = opts.LowerBound, opts.UpperBound
		}
		return s, "slice"
	case 1:
		m := memtable.New()
		for _, e := range es {
			m.Add(e.key.SeqNum(), e.key.Kind(), e.key.UserKey, e.value)
		}
		return m.NewIter(nil, nil), "memtable"
	case 2:
		return buildTable(t, 1, es).NewIter(nil, nil), "sstable"
	default:
		if len(es) == 0 {
			return newSliceIter(nil), "slice"
		}
		useSST := rng.Intn(2) == 0
		cnt := new(int)
		*open = append(*open, cnt)
		files, opener := levelOf(t, rng, splitFiles(rng, es), useSST, cnt)
		var lopts IterOptions
		if rng.Intn(2) == 0 {
			lopts = opts
		}
		return NewLevelIter(lopts, files, opener), fmt.Sprintf("level(sst=%v,%d tables)", useSST, len(files))
	}
}

func randomBounds(rng *rand.Rand, nKeys int) IterOptions {
	var o IterOptions
	if rng.Intn(3) == 0 {
		o.LowerBound = randomKey(rng, nKeys)
	}
	if rng.Intn(3) == 0 {
		o.UpperBound = randomKey(rng, nKeys)
	}
	return o
}

var ops = []string{"first", "last", "seek-ge", "seek-lt", "next", "next", "next", "prev", "prev", "prev"}

// checkAgainstModel runs random operations on it and the model and
// requires the same answers, returning the operation log for failures.
func checkAgainstModel(t *testing.T, rng *rand.Rand, it base.InternalIterator, m *iterModel, nKeys, nOps int, desc string) {
	var log strings.Builder
	for i := 0; i < nOps; i++ {
		op := ops[rng.Intn(len(ops))]
		var k []byte
		if op == "seek-ge" || op == "seek-lt" {
			k = randomKey(rng, nKeys)
		}
		got, want := doOp(it, op, k), m.do(op, k)
		fmt.Fprintf(&log, "%s %s -> ", op, k)
		if want {
			fmt.Fprintf(&log, "%s\n", m.es[m.pos])
		} else {
			log.WriteString(".\n")
		}
		require.NoError(t, it.Error())
		if got != want {
			t.Fatalf("%s\nop %d: %s %s: got %v, want %v\nlog:\n%s", desc, i, op, k, got, want, log.String())
		}
		if want {
			e := m.es[m.pos]
			if base.CompareInternal(it.Key(), e.key) != 0 || it.Key().Trailer != e.key.Trailer || !bytes.Equal(it.Value(), e.value) {
				t.Fatalf("%s\nop %d: %s %s: got %s, want %s\nlog:\n%s", desc, i, op, k,
					formatEntry(it.Key(), it.Value()), e, log.String())
			}
		}
	}
}

// TestMergingIterModel compares MergingIter over random children of every
// kind (slices, memtables, sstables, level iterators) with a sorted model,
// under random bounds, seeks and direction changes.
func TestMergingIterModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	for trial := 0; trial < trials(150); trial++ {
		nKeys := 1 + rng.Intn(40)
		all := randomEntries(rng, rng.Intn(300), nKeys)
		nChildren := 1 + rng.Intn(8)
		parts := make([][]entry, nChildren)
		for _, e := range all {
			i := rng.Intn(nChildren)
			parts[i] = append(parts[i], e)
		}
		opts := randomBounds(rng, nKeys)
		var children []base.InternalIterator
		var names []string
		var open []*int
		for _, p := range parts {
			sortEntries(p)
			c, name := randomChild(t, rng, p, opts, &open)
			children = append(children, c)
			names = append(names, fmt.Sprintf("%s(%d)", name, len(p)))
		}
		it := NewMergingIter(opts, children...)
		desc := fmt.Sprintf("trial %d: bounds [%s,%s) children %s", trial, opts.LowerBound, opts.UpperBound, strings.Join(names, " "))
		checkAgainstModel(t, rng, it, newIterModel(all, opts.LowerBound, opts.UpperBound), nKeys, 400, desc)
		require.NoError(t, it.Close())
		for _, n := range open {
			require.Zero(t, *n, "tables left open")
		}
	}
}

// TestLevelIterModel compares LevelIter with a sorted model.
func TestLevelIterModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	for trial := 0; trial < trials(200); trial++ {
		nKeys := 1 + rng.Intn(60)
		all := randomEntries(rng, 1+rng.Intn(200), nKeys)
		sortEntries(all)
		open := 0
		useSST := rng.Intn(2) == 0
		files, opener := levelOf(t, rng, splitFiles(rng, all), useSST, &open)
		opts := randomBounds(rng, nKeys)
		it := NewLevelIter(opts, files, opener)
		desc := fmt.Sprintf("trial %d: bounds [%s,%s) %d tables sst=%v", trial, opts.LowerBound, opts.UpperBound, len(files), useSST)
		checkAgainstModel(t, rng, it, newIterModel(all, opts.LowerBound, opts.UpperBound), nKeys, 300, desc)
		require.NoError(t, it.Close())
		require.Zero(t, open, "tables left open")
	}
}

// TestMergingIterErrors: a child that fails at any positioning call fails
// the merging iterator, which stays failed and reports that error.
func TestMergingIterErrors(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	for trial := 0; trial < trials(300); trial++ {
		all := randomEntries(rng, 50, 10)
		parts := make([][]entry, 3)
		for _, e := range all {
			i := rng.Intn(3)
			parts[i] = append(parts[i], e)
		}
		var children []base.InternalIterator
		var bad *sliceIter
		for i, p := range parts {
			sortEntries(p)
			s := newSliceIter(p)
			if i == 1 {
				s.failAt = 1 + rng.Intn(40)
				bad = s
			}
			children = append(children, s)
		}
		it := NewMergingIter(IterOptions{}, children...)
		failed := false
		for i := 0; i < 100; i++ {
			op := ops[rng.Intn(len(ops))]
			ok := doOp(it, op, randomKey(rng, 10))
			if bad.err != nil {
				// The failing child may have failed in this call.
				if !ok {
					require.ErrorIs(t, it.Error(), errInjected)
					failed = true
				}
			}
			if failed {
				require.False(t, ok)
				require.ErrorIs(t, it.Error(), errInjected)
			}
		}
		require.ErrorIs(t, it.Close(), errInjected)
		for _, c := range children {
			require.True(t, c.(*sliceIter).closed)
		}
	}
}

// TestLevelIterErrors: opener and table errors fail the level iterator.
func TestLevelIterErrors(t *testing.T) {
	es := []entry{
		{key: base.MakeInternalKey([]byte("a"), 1, base.KindSet)},
		{key: base.MakeInternalKey([]byte("b"), 2, base.KindSet)},
	}
	files := []*manifest.FileMetadata{
		{FileNum: 1, Smallest: es[0].key, Largest: es[0].key},
		{FileNum: 2, Smallest: es[1].key, Largest: es[1].key},
	}
	openErr := fmt.Errorf("cannot open")
	it := NewLevelIter(IterOptions{}, files, func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		if f.FileNum == 2 {
			return nil, openErr
		}
		return newSliceIter(es[:1]), nil
	})
	require.True(t, it.First())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Error(), openErr)
	require.False(t, it.First(), "errors are sticky")
	require.ErrorIs(t, it.Close(), openErr)

	var bad *sliceIter
	it = NewLevelIter(IterOptions{}, files, func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		bad = newSliceIter(es[f.FileNum-1 : f.FileNum])
		if f.FileNum == 2 {
			bad.failAt = 2
		}
		return bad, nil
	})
	require.True(t, it.SeekGE([]byte("b")))
	require.False(t, it.Next())
	require.ErrorIs(t, it.Error(), errInjected)
	require.ErrorIs(t, it.Close(), errInjected)
}
