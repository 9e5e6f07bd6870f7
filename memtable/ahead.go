package memtable

import (
	"os"
	"unsafe"
)

// Memory faulted in ahead of the writer.
//
// A memtable's arena chunks and B-tree nodes are new heap memory, and while
// the heap grows (the first memtables of a process, a database loading more
// than the heap held before) the writer's first store to each of its pages
// is a page fault: the kernel zeroes a page and maps it, microseconds with
// page-table isolation. perf record -e page-faults over a 1M-key fillrandom
// put 45% of the process's faults in the arena copy of Add and 27% in node
// splits, all on the writer's goroutine, inside the memtable's write lock.
//
// An ahead allocates the next chunk or slab of nodes on another goroutine
// and touches one byte of each page, so that the faults are taken there, on
// the other core, while the writer fills the current one. The writer takes
// the prepared one when it needs it, or allocates inline if it is not ready
// yet. At most aheadDepth preparations are in flight per ahead; they start
// at the second allocation, so a memtable that fits in its first chunk (the
// small memtables of tests) never pays for a spare one.

// pageSize is the stride of the touches.
var pageSize = os.Getpagesize()

// touchPages stores a zero byte into each page of b's memory, which is
// zero already (a fresh allocation): the value is unchanged, only the pages
// are faulted in. Pointer slots in b stay nil, so the store is invisible
// to the garbage collector.
func touchPages(p unsafe.Pointer, n uintptr) {
	b := unsafe.Slice((*byte)(p), n)
	for i := 0; i < len(b); i += pageSize {
		b[i] = 0
	}
	if n > 0 {
		b[n-1] = 0
	}
}

// ahead prepares the next T of a stream of allocations on its own
// goroutine. Used by the memtable's one writer only.
type ahead[T any] struct {
	ch      chan T // capacity aheadDepth: a preparation never blocks
	pending int    // preparations in flight or waiting in ch
	taken   int    // allocations so far
}

// aheadDepth is how many preparations an ahead keeps in flight. A new
// goroutine starts on the writer's own P (Go's runnext) and runs there
// only when the writer blocks or is preempted, unless the other P steals
// it first; with one in flight, perf showed a third of the chunks still
// faulted in inline. Two give it time to.
const aheadDepth = 2

// take returns a new T: a prepared one if one is ready, else one made
// inline by alloc; then, from the second allocation on, starts
// preparations until aheadDepth are in flight.
func (a *ahead[T]) take(alloc func() T) T {
	if !prefault {
		return alloc()
	}
	var v T
	got := false
	if a.pending > 0 {
		select {
		case v = <-a.ch:
			a.pending--
			got = true
		default:
		}
	}
	if !got {
		v = alloc()
	}
	a.taken++
	if a.taken < 2 {
		return v
	}
	if a.ch == nil {
		a.ch = make(chan T, aheadDepth)
	}
	for ; a.pending < aheadDepth; a.pending++ {
		ch := a.ch
		go func() { ch <- alloc() }()
	}
	return v
}

// slabNodes is how many B-tree nodes (about 3.1 KiB each) a slab holds.
const slabNodes = 16

// newChunk returns an empty arena chunk whose pages are faulted in.
func newChunk() []byte {
	b := make([]byte, arenaChunkSize)
	if prefault {
		touchPages(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
	}
	return b[:0]
}

// newSlab returns slabNodes zero nodes whose pages are faulted in.
func newSlab() []node {
	s := make([]node, slabNodes)
	if prefault {
		touchPages(unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*unsafe.Sizeof(node{}))
	}
	return s
}
