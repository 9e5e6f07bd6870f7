package memtable

import (
	"syscall"
	"unsafe"
)

// hugePageSize is the size of an x86-64 / arm64 (4 KiB base page)
// transparent huge page.
const hugePageSize = 2 << 20

// madvHugepage is MADV_HUGEPAGE (linux/mman-common.h).
const madvHugepage = 14

// adviseHuge marks the 2 MiB-aligned ranges covering [p, p+n) eligible for
// transparent huge pages (madvise MADV_HUGEPAGE), so that the first store
// to a range still wholly unmapped maps one 2 MiB page instead of the 512
// faults of its 4 KiB pages. The range may reach into neighbouring heap
// memory: the advice changes only the size of the pages a later fault
// maps, never the memory's contents. Errors (a kernel without THP) are
// ignored: the pages are then 4 KiB ones, as without the advice.
func adviseHuge(p unsafe.Pointer, n uintptr) {
	if n == 0 {
		return
	}
	start := uintptr(p) &^ (hugePageSize - 1)
	end := (uintptr(p) + n + hugePageSize - 1) &^ (hugePageSize - 1)
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvHugepage)
}
