package memtable

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
)

// BenchmarkAddSharedPrefix is BenchmarkAdd with redis-benchmark's keys:
// "hll:" and 12 digits of a random number below 100,000, so that every
// key has the same first 8 bytes (one merge operand of 6 bytes each, a
// fresh memtable every 500,000 entries).
func BenchmarkAddSharedPrefix(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	keys := make([][]byte, 1<<20)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "hll:%012d", rng.Intn(100000))
	}
	val := make([]byte, 6)
	var m *MemTable
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%500000 == 0 {
			b.StopTimer()
			m = New()
			b.StartTimer()
		}
		m.Add(uint64(i+1), base.KindMerge, keys[i&(len(keys)-1)], val)
	}
}

// TestBTreeModelSharedPrefix is TestBTreeModel with keys that mostly share
// their first 8 bytes (a few prefixes, some short keys and some that
// differ only past 16 bytes), so that nodes go shared, unshare when a key
// of another prefix arrives and reshare after splits. It checks that each
// of those cases is reached.
func TestBTreeModelSharedPrefix(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	prefixes := []string{"hll:0000", "key:0000", "hll:0001", "hll:000", ""}
	mkKey := func() []byte {
		k := []byte(prefixes[rng.Intn(len(prefixes))])
		if rng.Intn(8) != 0 {
			k = k[:0]
			k = append(k, prefixes[0]...) // mostly one prefix
		}
		for range []int{0, 4, 8, 8, 14}[rng.Intn(5)] {
			k = append(k, byte('0'+rng.Intn(3)))
		}
		return k
	}
	testBTreeModel(t, seed, rng, mkKey)

	// The cases: shared nodes found by a search, nodes unshared, shared
	// nodes after a split of an unshared one.
	var tr btree
	for i := 0; i < 20000; i++ {
		tr.insert(makeEntry(mkKey(), uint64(i+1)<<8))
	}
	if s := tr.check(); s != "" {
		t.Fatalf("seed %d: %s", seed, s)
	}
	var shared, unshared int
	var walk func(x *node)
	walk = func(x *node) {
		if x.shared {
			shared++
		} else {
			unshared++
		}
		if x.children != nil {
			for _, c := range x.children[:x.n+1] {
				walk(c)
			}
		}
	}
	walk(tr.root)
	if shared == 0 || unshared == 0 {
		t.Fatalf("seed %d: %d shared and %d unshared nodes, want both", seed, shared, unshared)
	}
	t.Logf("%d shared, %d unshared nodes", shared, unshared)
}
