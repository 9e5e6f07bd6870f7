package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// runCounts counts what TestIteratorRunBoundaries reached: refills of each
// run size, and direction changes on a run's first and last entries.
type runCounts struct {
	refills            map[int]int
	turnFirst, turnEnd int
}

// observe records a step taken from a position (pos within a buffer of
// length n, run size run, direction fwd) that landed on a new run.
func (c *runCounts) observe(it *Iterator, pos, n int, fwd bool, wantFwd bool) {
	if fwd != wantFwd {
		if pos == 0 {
			c.turnFirst++
		}
		if pos == n-1 {
			c.turnEnd++
		}
		return
	}
	if pos == n-1 && it.pos == 0 && len(it.buf) > 0 {
		c.refills[it.run]++
	}
}

// TestIteratorRunBoundaries walks a memtable with random steps, direction
// changes and bounds, checking every entry against the sorted model, and
// asserts that the walk crossed refills of every run size (2*minRun
// doubling to maxRun) and turned around on the first and the last entry of a run.
func TestIteratorRunBoundaries(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	m := New()
	var model []modelEntry
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprintf("k%04d", i))
		m.Add(uint64(i+1), base.KindSet, k, k)
		model = append(model, modelEntry{base.MakeInternalKey(k, uint64(i+1), base.KindSet), k})
	}
	c := runCounts{refills: map[int]int{}}
	for trial := 0; trial < 300; trial++ {
		lo, hi := rng.Intn(1100), rng.Intn(1100)
		if lo > hi {
			lo, hi = hi, lo
		}
		lower, upper := []byte(fmt.Sprintf("k%04d", lo)), []byte(fmt.Sprintf("k%04d", hi))
		if trial%3 == 0 {
			lower, upper = nil, nil
			lo, hi = 0, len(model)
		}
		hi = min(hi, len(model))
		lo = min(lo, hi)
		walkRuns(t, rng, m.NewIter(lower, upper), model, lo, hi, &c)
	}
	// A step past a run loads one twice as long; seeks and turns load minRun.
	for run := 2 * minRun; run <= maxRun; run *= 2 {
		require.NotZero(t, c.refills[run], "no refill of %d entries reached (%v)", run, c.refills)
	}
	require.NotZero(t, c.turnFirst, "no turn on a run's first entry")
	require.NotZero(t, c.turnEnd, "no turn on a run's last entry")
	t.Logf("refills by run size %v; turns on first %d, last %d", c.refills, c.turnFirst, c.turnEnd)
}

// walkRuns seeks it (bounded to model[lo:hi]) to a random key and takes
// random runs of steps, checking each entry.
func walkRuns(t *testing.T, rng *rand.Rand, it *Iterator, model []modelEntry, lo, hi int, c *runCounts) {
	t.Helper()
	start := lo + rng.Intn(hi-lo+1)
	var ok bool
	pos := start
	if rng.Intn(2) == 0 {
		ok = it.SeekGE([]byte(fmt.Sprintf("k%04d", start)))
	} else {
		ok = it.SeekLT([]byte(fmt.Sprintf("k%04d", start)))
		pos = start - 1
	}
	for step := 0; step < 400; step++ {
		require.Equal(t, pos >= lo && pos < hi, ok, "position %d in [%d,%d)", pos, lo, hi)
		if !ok {
			break
		}
		require.Equal(t, model[pos].k.String(), it.Key().String())
		require.True(t, bytes.Equal(model[pos].v, it.Value()))
		// Mostly keep going; sometimes turn, more often at a run's edge.
		fwd := it.forward
		edge := it.pos == 0 || it.pos == len(it.buf)-1
		if rng.Intn(40) == 0 || (edge && rng.Intn(4) == 0) {
			fwd = !fwd
		}
		was, n, dir := it.pos, len(it.buf), it.forward
		if fwd {
			ok, pos = it.Next(), pos+1
		} else {
			ok, pos = it.Prev(), pos-1
		}
		c.observe(it, was, n, dir, fwd)
	}
	require.NoError(t, it.Close())
}

// BenchmarkIterSeekNext is a seek and 3 steps on a 100k-entry memtable:
// about what a merging iterator over several sources takes from one of
// them in a seek and 10 Nexts.
func BenchmarkIterSeekNext(b *testing.B) {
	m := New()
	const n = 100000
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("k%08d", (i*7919)%n))
		m.Add(uint64(i+1), base.KindSet, k, k)
	}
	it := m.NewIter(nil, nil)
	key := make([]byte, 0, 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = fmt.Appendf(key[:0], "k%08d", (i*104729)%n)
		ok := it.SeekGE(key)
		for j := 0; ok && j < 3; j++ {
			ok = it.Next()
		}
	}
}

// BenchmarkIterSeekNextRandom is BenchmarkIterSeekNext on the shape of
// YCSB E's memtable: 200k 16-byte decimal keys with 100-byte values,
// inserted in random order.
func BenchmarkIterSeekNextRandom(b *testing.B) {
	m := New()
	const n = 200000
	val := make([]byte, 100)
	for _, i := range rand.New(rand.NewSource(1)).Perm(n) {
		m.Add(uint64(i+1), base.KindSet, fmt.Appendf(nil, "%016d", 2*i), val)
	}
	it := m.NewIter(nil, nil)
	key := make([]byte, 0, 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = fmt.Appendf(key[:0], "%016d", 2*((i*104729)%n)+1)
		ok := it.SeekGE(key)
		for j := 0; ok && j < 3; j++ {
			ok = it.Next()
		}
	}
}

// TestIteratorKeyLengths: keys of 0 to 24 bytes, zero bytes among them, so
// that keys up to 16 bytes (which Key rebuilds from the entry's two key
// words, zero-padded) sit next to longer ones and to their own
// zero-extended forms; full walks both ways and seeks to every key return
// the exact bytes and trailers of the sorted model.
func TestIteratorKeyLengths(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	alphabet := []byte{0, 0, 1, 'a', 0xff}
	m := New()
	var model []modelEntry
	short, long := 0, 0
	for seq := uint64(1); seq <= 3000; seq++ {
		k := make([]byte, rng.Intn(25))
		for i := range k {
			k[i] = alphabet[rng.Intn(len(alphabet))]
		}
		if len(k) <= 16 {
			short++
		} else {
			long++
		}
		v := []byte(fmt.Sprintf("v%d", seq))
		m.Add(seq, base.KindSet, k, v)
		model = append(model, modelEntry{base.MakeInternalKey(k, seq, base.KindSet), v})
	}
	require.NotZero(t, short)
	require.NotZero(t, long)
	model = sortedModel(model)
	// The case the words alone cannot order: a short key next to a
	// longer one it is a prefix of.
	prefixPairs := 0
	for i := 1; i < len(model); i++ {
		a, b := model[i-1].k.UserKey, model[i].k.UserKey
		if len(a) <= 16 && len(b) > 16 && bytes.HasPrefix(b, a) {
			prefixPairs++
		}
	}
	require.NotZero(t, prefixPairs, "no short key next to a longer key it prefixes")
	check := func(it *Iterator, i int) {
		t.Helper()
		k := it.Key()
		require.True(t, bytes.Equal(model[i].k.UserKey, k.UserKey), "entry %d: key %x, want %x", i, k.UserKey, model[i].k.UserKey)
		require.Equal(t, model[i].k.Trailer, k.Trailer, "entry %d", i)
		require.True(t, bytes.Equal(model[i].v, it.Value()), "entry %d", i)
	}
	it := m.NewIter(nil, nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		check(it, i)
		i++
	}
	require.Equal(t, len(model), i)
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		check(it, i)
	}
	require.Zero(t, i)
	for trial := 0; trial < 300; trial++ {
		j := rng.Intn(len(model))
		ukey := model[j].k.UserKey
		for j > 0 && bytes.Equal(model[j-1].k.UserKey, ukey) {
			j--
		}
		require.True(t, it.SeekGE(ukey))
		for s := 0; s < 20 && j < len(model); s++ {
			check(it, j)
			j++
			if !it.Next() {
				break
			}
		}
	}
	require.NoError(t, it.Close())
}

// TestIteratorSeekToOwnKey seeks with the slice Key returned (which lies in
// the iterator's run buffer, rewritten by the seek's fill), next to longer
// keys that share the sought key's 16 bytes.
func TestIteratorSeekToOwnKey(t *testing.T) {
	m := New()
	var seq uint64
	for i := 0; i < 200; i++ {
		k := []byte(fmt.Sprintf("key%013d", i)) // 16 bytes
		seq++
		m.Add(seq, base.KindSet, k, k)
		seq++
		long := append(append([]byte{}, k...), 'x')
		m.Add(seq, base.KindSet, long, long)
	}
	it := m.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		want := append([]byte(nil), it.Key().UserKey...)
		own := it.Key().UserKey
		require.True(t, it.SeekGE(own))
		require.Equal(t, want, it.Key().UserKey)
		require.True(t, it.SeekLT(it.Key().UserKey) || string(want) == "key0000000000000")
		require.True(t, it.SeekGE(want))
		require.Equal(t, want, it.Key().UserKey)
	}
	require.NoError(t, it.Close())
}

// TestIteratorRecycleKeepsRunBuffer: a recycled iterator scans past minRun
// entries without allocating its maxRun buffer again, sees the memtable it
// is next initialized on (not the one before), and Recycle leaves no
// pointer into the old memtable's arena.
func TestIteratorRecycleKeepsRunBuffer(t *testing.T) {
	fill := func(prefix string) *MemTable {
		m := New()
		for i := 0; i < 500; i++ {
			k := []byte(fmt.Sprintf("%s%012d", prefix, i))
			m.Add(uint64(i+1), base.KindSet, k, k)
		}
		return m
	}
	a, b := fill("aaaa"), fill("bbbb")
	var it Iterator
	scan := func(m *MemTable) (first [16]byte, n int) {
		m.InitIter(&it, nil, nil)
		for ok := it.First(); ok && n < 3*maxRun; ok = it.Next() {
			if n == 0 {
				copy(first[:], it.Key().UserKey)
			}
			n++
		}
		require.NoError(t, it.Close())
		it.Recycle()
		return first, n
	}
	first, n := scan(a)
	require.Equal(t, "aaaa000000000000", string(first[:]))
	require.Equal(t, 3*maxRun, n)
	require.Equal(t, maxRun, cap(it.spare), "the scan past minRun entries used the spare buffer")
	for _, e := range it.spare[:cap(it.spare)] {
		require.Nil(t, e.data, "Recycle left a pointer into the arena")
	}
	allocs := testing.AllocsPerRun(20, func() {
		if first, _ := scan(b); string(first[:]) != "bbbb000000000000" {
			t.Fatal("the recycled iterator read the memtable it was on before")
		}
	})
	require.Zero(t, allocs)
}
