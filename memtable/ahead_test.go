package memtable

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/base"
)

// TestAheadTake checks that an ahead makes its first allocation inline,
// keeps aheadDepth preparations in flight from the second on, and hands
// out the prepared ones.
func TestAheadTake(t *testing.T) {
	var made atomic.Int64
	alloc := func() int64 { return made.Add(1) }
	var a ahead[int64]
	if v := a.take(alloc); v != 1 || a.pending != 0 {
		t.Fatalf("first take: got %d with %d pending, want 1 with none", v, a.pending)
	}
	a.take(alloc)
	if a.pending != aheadDepth {
		t.Fatalf("after the second take: %d pending, want %d", a.pending, aheadDepth)
	}
	waitFor(t, func() bool { return len(a.ch) == aheadDepth })
	before := made.Load()
	v := a.take(alloc)
	if v <= 2 {
		t.Fatalf("third take returned %d, want a prepared value (> 2)", v)
	}
	// The take used a prepared value and started one replacement.
	waitFor(t, func() bool { return made.Load() == before+1 })
	if a.pending != aheadDepth {
		t.Fatalf("after the third take: %d pending, want %d", a.pending, aheadDepth)
	}
	seen := map[int64]bool{}
	for range 20 {
		v := a.take(alloc)
		if seen[v] {
			t.Fatalf("value %d handed out twice", v)
		}
		seen[v] = true
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// TestAheadAllocations checks what the writer's allocations come out as:
// zero nodes, empty chunks of arenaChunkSize, and no spare chunk for a
// memtable that fits in its first one.
func TestAheadAllocations(t *testing.T) {
	for _, x := range newSlab() {
		if x.n != 0 || x.children != nil || x.shared || x.items[maxItems-1] != (entry{}) {
			t.Fatal("newSlab returned a node that is not zero")
		}
	}
	c := newChunk()
	if len(c) != 0 || cap(c) != arenaChunkSize {
		t.Fatalf("newChunk: len %d cap %d", len(c), cap(c))
	}
	small := New()
	for i := range 100 {
		small.Add(uint64(i+1), base.KindSet, fmt.Appendf(nil, "key%04d", i), make([]byte, 100))
	}
	if small.chunks.pending != 0 || small.chunks.taken != 1 {
		t.Fatalf("a 100-entry memtable took %d chunks with %d prepared ahead, want 1 and 0", small.chunks.taken, small.chunks.pending)
	}
	tiny := New()
	for i := range maxItems {
		tiny.Add(uint64(i+1), base.KindSet, fmt.Appendf(nil, "key%04d", i), nil)
	}
	if tiny.tree.slabs.taken != 0 {
		t.Fatalf("a %d-entry memtable (one node) took %d slabs, want none", maxItems, tiny.tree.slabs.taken)
	}
	big := New()
	n := 3 * arenaChunkSize / 100
	for i := range n {
		big.Add(uint64(i+1), base.KindSet, fmt.Appendf(nil, "key%08d", (i*7919)%n), make([]byte, 100))
	}
	if big.chunks.taken < 3 || big.chunks.pending == 0 || big.tree.slabs.pending == 0 {
		t.Fatalf("a %d-entry memtable took %d chunks, %d prepared; %d slabs, %d prepared", n,
			big.chunks.taken, big.chunks.pending, big.tree.slabs.taken, big.tree.slabs.pending)
	}
	if msg := big.tree.check(); msg != "" {
		t.Fatal(msg)
	}
	var got int
	it := big.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		got++
	}
	if got != n {
		t.Fatalf("iterated %d entries, want %d", got, n)
	}
}
