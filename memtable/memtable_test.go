package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

type modelEntry struct {
	k base.InternalKey
	v []byte
}

func sortedModel(es []modelEntry) []modelEntry {
	out := append([]modelEntry(nil), es...)
	sort.Slice(out, func(i, j int) bool { return base.CompareInternal(out[i].k, out[j].k) < 0 })
	return out
}

func collectForward(it base.InternalIterator, ok bool) []string {
	var out []string
	for ; ok; ok = it.Next() {
		out = append(out, it.Key().String()+"="+string(it.Value()))
	}
	return out
}

func collectBackward(it base.InternalIterator, ok bool) []string {
	var out []string
	for ; ok; ok = it.Prev() {
		out = append(out, it.Key().String()+"="+string(it.Value()))
	}
	return out
}

func render(es []modelEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.k.String()+"="+string(e.v))
	}
	return out
}

func reversed(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := make([]string, len(s))
	for i := range s {
		out[len(s)-1-i] = s[i]
	}
	return out
}

// TestMemTableModel adds random sets, deletes and merges and checks the
// memtable against a sorted model: full scans both ways, bounded scans and
// seeks, direction changes, and Get at snapshots.
func TestMemTableModel(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	m, model := randomMemTable(rng)
	require.EqualValues(t, len(model), m.Len())

	it := m.NewIter(nil, nil)
	want := render(model)
	require.Equal(t, want, collectForward(it, it.First()))
	require.Equal(t, reversed(want), collectBackward(it, it.Last()))

	for i := 0; i < 200; i++ {
		checkBoundsAndSeeks(t, rng, m, it, model)
	}
	for i := 0; i < 300; i++ {
		checkDirectionChanges(t, rng, it, model)
	}
	// Get at every snapshot boundary of a few keys.
	for i := 0; i < 100; i++ {
		checkGetAtSnapshot(t, rng, m, model)
	}
}

// randomMemTable is a memtable of 3,000 random entries over 400 keys, and
// its model, sorted. Its key filter is small (10 bits a key), so Gets pass
// through it.
func randomMemTable(rng *rand.Rand) (*MemTable, []modelEntry) {
	m := NewWithFilter(4000)
	var model []modelEntry
	for seq := uint64(1); seq <= 3000; seq++ {
		k := []byte(fmt.Sprintf("k%03d", rng.Intn(400)))
		kind := base.Kind(rng.Intn(3))
		v := []byte(fmt.Sprintf("v%d", seq))
		if kind == base.KindDelete {
			v = nil
		}
		m.Add(seq, kind, k, v)
		model = append(model, modelEntry{base.MakeInternalKey(k, seq, kind), append([]byte{}, v...)})
	}
	return m, sortedModel(model)
}

// checkBoundsAndSeeks: a scan both ways with random bounds, then SeekGE
// and SeekLT of a random key on the unbounded iterator it.
func checkBoundsAndSeeks(t *testing.T, rng *rand.Rand, m *MemTable, it *Iterator, model []modelEntry) {
	t.Helper()
	lo := []byte(fmt.Sprintf("k%03d", rng.Intn(410)))
	hi := []byte(fmt.Sprintf("k%03d", rng.Intn(410)))
	if bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	var sub []modelEntry
	for _, e := range model {
		if bytes.Compare(e.k.UserKey, lo) >= 0 && bytes.Compare(e.k.UserKey, hi) < 0 {
			sub = append(sub, e)
		}
	}
	bit := m.NewIter(lo, hi)
	require.Equal(t, render(sub), collectForward(bit, bit.First()), "bounds [%s,%s)", lo, hi)
	require.Equal(t, reversed(render(sub)), collectBackward(bit, bit.Last()))

	// SeekGE / SeekLT against the model on the unbounded iterator.
	sk := []byte(fmt.Sprintf("k%03d", rng.Intn(410)))
	idx := sort.Search(len(model), func(j int) bool { return bytes.Compare(model[j].k.UserKey, sk) >= 0 })
	require.Equal(t, render(model[idx:]), collectForward(it, it.SeekGE(sk)))
	require.Equal(t, reversed(render(model[:idx])), collectBackward(it, it.SeekLT(sk)))
}

// checkDirectionChanges: at a random position, step back and forth.
func checkDirectionChanges(t *testing.T, rng *rand.Rand, it *Iterator, model []modelEntry) {
	t.Helper()
	idx := rng.Intn(len(model))
	require.True(t, it.SeekGE(model[idx].k.UserKey))
	for it.Key().Trailer != model[idx].k.Trailer {
		require.True(t, it.Next())
	}
	pos := idx
	for step := 0; step < 150; step++ {
		if rng.Intn(2) == 0 {
			ok := it.Next()
			pos++
			if pos >= len(model) {
				require.False(t, ok)
				break
			}
			require.True(t, ok)
		} else {
			ok := it.Prev()
			pos--
			if pos < 0 {
				require.False(t, ok)
				break
			}
			require.True(t, ok)
		}
		require.Equal(t, model[pos].k.String(), it.Key().String())
	}
}

// checkGetAtSnapshot: Get of a random key at a random snapshot visits the
// key's entries the model has at or below it.
func checkGetAtSnapshot(t *testing.T, rng *rand.Rand, m *MemTable, model []modelEntry) {
	t.Helper()
	k := []byte(fmt.Sprintf("k%03d", rng.Intn(400)))
	snap := uint64(rng.Intn(3100))
	var want []string
	for _, e := range model {
		if bytes.Equal(e.k.UserKey, k) && e.k.SeqNum() <= snap {
			want = append(want, e.k.String())
		}
	}
	var got []string
	m.Get(k, snap, func(ik base.InternalKey, _ []byte) bool {
		got = append(got, ik.String())
		return true
	})
	require.Equal(t, want, got)
}

func TestMemTableEmptyKeyAndValue(t *testing.T) {
	m := New()
	m.Add(1, base.KindSet, nil, nil)
	m.Add(2, base.KindSet, []byte{}, []byte("x"))
	var vals []string
	m.Get(nil, 10, func(k base.InternalKey, v []byte) bool {
		require.NotNil(t, v)
		vals = append(vals, string(v))
		return true
	})
	require.Equal(t, []string{"x", ""}, vals)
}

func TestMemTableLargeValue(t *testing.T) {
	m := New()
	big := bytes.Repeat([]byte("z"), 3*arenaChunkSize)
	m.Add(1, base.KindSet, []byte("big"), big)
	m.Add(2, base.KindSet, []byte("small"), []byte("s"))
	m.Get([]byte("big"), 5, func(_ base.InternalKey, v []byte) bool {
		require.Equal(t, big, v)
		return false
	})
	require.Greater(t, m.ApproximateSize(), int64(len(big)))
}

// TestMemTableConcurrentReaders runs one writer and several readers; run it
// with -race.
func TestMemTableConcurrentReaders(t *testing.T) {
	m := New()
	const n = 20000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				it := m.NewIter(nil, nil)
				var prev base.InternalKey
				first := true
				for ok := it.First(); ok; ok = it.Next() {
					k := it.Key()
					if !first && base.CompareInternal(prev, k) >= 0 {
						t.Errorf("out of order: %s then %s", prev, k)
						return
					}
					prev, first = k.Clone(), false
				}
				m.Get([]byte("k00001"), base.SeqNumMax, func(base.InternalKey, []byte) bool { return false })
			}
		}()
	}
	for i := 1; i <= n; i++ {
		m.Add(uint64(i), base.KindSet, []byte(fmt.Sprintf("k%05d", i%5000)), []byte("v"))
	}
	close(stop)
	wg.Wait()
	require.EqualValues(t, n, m.Len())
}

func BenchmarkAdd(b *testing.B) {
	m := New()
	key := make([]byte, 16)
	val := make([]byte, 100)
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rng.Read(key)
		m.Add(uint64(i+1), base.KindSet, key, val)
	}
}

// BenchmarkAddFullTable is the DB's memtable Put: a key filter sized for the
// default 32 MiB memtable (a cold word per Add) and a new table each 250k
// entries, about what 32 MiB holds with 16-byte keys and 100-byte values.
func BenchmarkAddFullTable(b *testing.B) {
	const perTable = 250000
	newTable := func() *MemTable { return NewWithFilter(int64(FilterBitsPerByte * (32 << 20))) }
	m := newTable()
	key := make([]byte, 16)
	val := make([]byte, 100)
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%perTable == perTable-1 {
			b.StopTimer()
			m = newTable()
			b.StartTimer()
		}
		rng.Read(key)
		m.Add(uint64(i+1), base.KindSet, key, val)
	}
}

func BenchmarkGet(b *testing.B) {
	m := New()
	var keys [][]byte
	for i := 0; i < 100000; i++ {
		k := []byte(fmt.Sprintf("%016d", i*7919%100000))
		keys = append(keys, k)
		m.Add(uint64(i+1), base.KindSet, k, make([]byte, 100))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Get(keys[i%len(keys)], base.SeqNumMax, func(base.InternalKey, []byte) bool { return false })
	}
}

// TestLessEntryMatchesCompareInternal checks the word-prefix fast path of
// lessEntry against base.CompareInternal on keys built from bytes that
// stress zero padding (0x00, 0x01, 0xff) at lengths 0..20.
func TestLessEntryMatchesCompareInternal(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	alphabet := []byte{0x00, 0x01, 0xff}
	mk := func() entry {
		k := make([]byte, rng.Intn(21))
		for i := range k {
			k[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return makeEntry(k, uint64(rng.Intn(4)))
	}
	for i := 0; i < 200000; i++ {
		a, b := mk(), mk()
		want := base.CompareInternal(base.InternalKey{UserKey: a.ukey(), Trailer: a.trailer},
			base.InternalKey{UserKey: b.ukey(), Trailer: b.trailer}) < 0
		require.Equal(t, want, lessEntry(&a, &b), "%x#%d vs %x#%d", a.ukey(), a.trailer, b.ukey(), b.trailer)
	}
}
