//go:build unix

package vfs

import (
	"errors"
	"syscall"
)

var _ Mapper = diskFile{}

// Mmap maps the first size bytes of the file read-only.
func (f diskFile) Mmap(size int64) ([]byte, func() error, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, errors.New("vfs: cannot map an empty or oversized file")
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
