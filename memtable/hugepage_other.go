//go:build !linux

package memtable

import "unsafe"

// adviseHuge does nothing where madvise(MADV_HUGEPAGE) does not exist.
func adviseHuge(unsafe.Pointer, uintptr) {}
