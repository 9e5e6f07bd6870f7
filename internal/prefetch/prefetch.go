// Package prefetch asks the CPU to start loading memory that is about to be
// read, so that the loads of a whole block overlap instead of arriving one
// cache line at a time.
//
// The read path uses it on a block-cache miss: the stored block sits in the
// page cache behind a table's mapping, usually not in any CPU cache, and the
// checksum pass would otherwise stall on each line in turn. A prefetch is a
// hint: it never faults, never changes memory and may be ignored, so a wrong
// or useless one costs only bandwidth.
//
// The assembly steps 64 bytes between hints, the cache line of every amd64
// and arm64 core sieve runs on (a larger line only makes some hints
// redundant).
package prefetch

import "unsafe"

// Read hints that b will be read soon. Safe on any slice, including an
// empty one.
func Read(b []byte) {
	if len(b) == 0 {
		return
	}
	lines(&b[0], len(b))
}

// Write hints that b will be written soon (the line is fetched ready to be
// modified), for a destination buffer that has gone cold. Safe on any
// slice, including an empty one.
func Write(b []byte) {
	if len(b) == 0 {
		return
	}
	linesW(&b[0], len(b))
}

// Object hints that the *p value of size n (unsafe.Sizeof) will be read
// soon: a struct the caller reaches through a pointer, such as a hash
// table entry.
func Object(p unsafe.Pointer, n uintptr) {
	if p == nil || n == 0 {
		return
	}
	lines((*byte)(p), int(n))
}
