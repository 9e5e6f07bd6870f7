package vfs

// Mapper is implemented by files that can be memory-mapped read-only (the
// OS file system's). Table readers use it to read blocks without a system
// call per block; files that do not implement it are read with ReadAt.
//
// The mapping stays valid until release is called, even if the file is
// closed or removed meanwhile; bytes of the mapping must not be used after
// release. The file must not be written or truncated while mapped.
type Mapper interface {
	Mmap(size int64) (data []byte, release func() error, err error)
}
