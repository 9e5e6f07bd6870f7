package compaction

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/memtable"
)

// benchChildren spreads n distinct keys (16-byte user keys, 100-byte
// values) over k children at random, each sorted.
func benchChildren(n, k int) [][]entry {
	rng := rand.New(rand.NewSource(1))
	parts := make([][]entry, k)
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		e := entry{key: base.MakeInternalKey([]byte(fmt.Sprintf("key%013d", i)), uint64(i+1), base.KindSet), value: val}
		c := rng.Intn(k)
		parts[c] = append(parts[c], e)
	}
	return parts
}

// BenchmarkMergingIterNext measures one Next of a MergingIter over k
// children (slice-backed, so the figure is the merging cost itself), and
// over memtable iterators for comparison.
func BenchmarkMergingIterNext(b *testing.B) {
	for _, k := range []int{1, 4, 8} {
		parts := benchChildren(100_000, k)
		b.Run(fmt.Sprintf("children=%d/slice", k), func(b *testing.B) {
			children := make([]base.InternalIterator, k)
			for i, p := range parts {
				children[i] = newSliceIter(p)
			}
			benchNext(b, NewMergingIter(IterOptions{}, children...))
		})
		b.Run(fmt.Sprintf("children=%d/memtable", k), func(b *testing.B) {
			children := make([]base.InternalIterator, k)
			for i, p := range parts {
				m := memtable.New()
				for _, e := range p {
					m.Add(e.key.SeqNum(), e.key.Kind(), e.key.UserKey, e.value)
				}
				children[i] = m.NewIter(nil, nil)
			}
			benchNext(b, NewMergingIter(IterOptions{}, children...))
		})
	}
}

func benchNext(b *testing.B, it base.InternalIterator) {
	it.First()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.Next() {
			it.First()
		}
	}
}

// benchRunChildren spreads n distinct keys over 4 children as an LSM during
// YCSB E has them: half the keys in the last child (the bottom level), in
// runs of 1 to 4 consecutive keys, the rest over the three others.
func benchRunChildren(n int) [][]entry {
	rng := rand.New(rand.NewSource(3))
	parts := make([][]entry, 4)
	val := make([]byte, 100)
	for i := 0; i < n; {
		c := 3
		if rng.Intn(2) == 0 {
			c = rng.Intn(3)
		}
		for run := 1 + rng.Intn(4); run > 0 && i < n; run-- {
			e := entry{key: base.MakeInternalKey([]byte(fmt.Sprintf("key%013d", i)), uint64(i+1), base.KindSet), value: val}
			parts[c] = append(parts[c], e)
			i++
		}
	}
	return parts
}

// BenchmarkMergingIterNextRuns is BenchmarkMergingIterNext where children
// yield runs of consecutive keys, the case MergingIter.fixTop's cached
// successor serves (one comparison per step of a run instead of two).
func BenchmarkMergingIterNextRuns(b *testing.B) {
	parts := benchRunChildren(100_000)
	children := make([]base.InternalIterator, len(parts))
	for i, p := range parts {
		children[i] = newSliceIter(p)
	}
	benchNext(b, NewMergingIter(IterOptions{}, children...))
}

// BenchmarkMergingIterSeekGE measures a SeekGE on 8 children.
func BenchmarkMergingIterSeekGE(b *testing.B) {
	parts := benchChildren(100_000, 8)
	children := make([]base.InternalIterator, len(parts))
	for i, p := range parts {
		children[i] = newSliceIter(p)
	}
	it := NewMergingIter(IterOptions{}, children...)
	rng := rand.New(rand.NewSource(2))
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%013d", rng.Intn(100_000)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it.SeekGE(keys[i&1023])
	}
}

// BenchmarkCompactionIter measures the compaction iterator's throughput
// over a slice input (bytes = input keys and values):
//
//	unique:     every key once (the common L0→L1 case with random writes)
//	overwrites: 4 versions per key, 3 shadowed
//	snapshots:  4 versions per key, 2 snapshots keeping some
//	merges:     8 counter operands per key, collapsed by full merge
func BenchmarkCompactionIter(b *testing.B) {
	const keys = 50_000
	val := make([]byte, 100)
	build := func(versions int, kind base.Kind, value func(v int) []byte) []entry {
		es := make([]entry, 0, keys*versions)
		for i := 0; i < keys; i++ {
			uk := []byte(fmt.Sprintf("key%013d", i))
			for v := versions; v > 0; v-- {
				es = append(es, entry{key: base.MakeInternalKey(uk, uint64(v*keys+i), kind), value: value(v)})
			}
		}
		return es
	}
	cases := []struct {
		name string
		es   []entry
		opts GCOptions
	}{
		{"unique", build(1, base.KindSet, func(int) []byte { return val }), GCOptions{}},
		{"overwrites", build(4, base.KindSet, func(int) []byte { return val }), GCOptions{}},
		{"snapshots", build(4, base.KindSet, func(int) []byte { return val }),
			GCOptions{Snapshots: []uint64{2 * keys, 3*keys + keys/2}}},
		{"merges", build(8, base.KindMerge, func(v int) []byte { return []byte(strconv.Itoa(v)) }),
			GCOptions{Merger: counterMerger{}, ElideTombstone: func([]byte) bool { return true }}},
	}
	for _, c := range cases {
		var bytes int64
		for _, e := range c.es {
			bytes += int64(e.key.Size() + len(e.value))
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(bytes)
			var out int64
			for i := 0; i < b.N; i++ {
				it := NewIter(newSliceIter(c.es), c.opts)
				for ok := it.First(); ok; ok = it.Next() {
					_ = it.Key()
					_ = it.Value()
				}
				out = it.Stats().EntriesOut
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.es)), "ns/entry-in")
			b.ReportMetric(float64(out), "entries-out")
		})
	}
}
