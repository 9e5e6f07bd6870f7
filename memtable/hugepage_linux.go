package memtable

import (
	"os"
	"strings"
	"sync/atomic"
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
//
// Each madvise takes the process's memory-map lock for writing, stalling
// page faults on other threads meanwhile, and consecutive slabs mostly
// fall in the range advised last: that range is remembered
// (lastAdvised, shared by every memtable: a stale read only costs a
// redundant call) and not advised again. GODEBUG=disablethp=1, the Go
// runtime's switch for keeping its heap out of huge pages, turns the
// advice off too.
func adviseHuge(p unsafe.Pointer, n uintptr) {
	if n == 0 || thpDisabled {
		return
	}
	start := uintptr(p) &^ (hugePageSize - 1)
	end := (uintptr(p) + n + hugePageSize - 1) &^ (hugePageSize - 1)
	if end-start == hugePageSize && lastAdvised.Load() == start {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvHugepage)
	lastAdvised.Store(end - hugePageSize)
}

// lastAdvised is the start of the last 2 MiB range adviseHuge advised.
var lastAdvised atomic.Uintptr

// thpDisabled reports GODEBUG=disablethp=1 (read once, at start-up, as
// the runtime reads it).
var thpDisabled = godebugSet(os.Getenv("GODEBUG"), "disablethp")

// godebugSet reports whether the comma-separated GODEBUG settings s set
// name to 1 (the last setting of a name wins, as in the runtime).
func godebugSet(s, name string) bool {
	on := false
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == name {
			on = v == "1"
		}
	}
	return on
}
