package vfs

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A memNode is a directory or a file inode of a MemFS.
type memNode struct {
	isDir bool

	// Directories only, guarded by MemFS.mu.
	children map[string]*memNode // current entries
	durable  map[string]*memNode // entries as of the last SyncDir

	// Files only. mu guards the fields below; changing them also requires
	// MemFS.mu held (at least for reading), see MemFS.mu.
	mu sync.RWMutex
	// data is the current content; synced the content at the last Sync.
	// After a Sync both share one array (shared is true); data is copied
	// before any byte below len(synced) is changed in place, so synced
	// never changes except by Sync (and the corruption helpers).
	data, synced []byte
	shared       bool
	// dirty is a lower bound of the offsets changed since the last Sync:
	// data[:dirty] equals synced[:dirty] wherever both are long enough.
	dirty   int
	modTime time.Time
}

func newDir() *memNode {
	return &memNode{
		isDir:    true,
		children: make(map[string]*memNode),
		durable:  make(map[string]*memNode),
		modTime:  time.Now(),
	}
}

func newFile() *memNode { return &memNode{modTime: time.Now()} }

// REQUIRES: n.mu is held exclusively.
func (n *memNode) unshareBelow(off int) {
	if n.shared && off < len(n.synced) {
		n.data = slices.Grow(slices.Clone(n.data), 512)
		n.shared = false
	}
}

// REQUIRES: n.mu is held exclusively.
func (n *memNode) append(p []byte) {
	off := len(n.data)
	n.unshareBelow(off)
	n.data = append(n.data, p...)
	n.dirty = min(n.dirty, off)
	n.modTime = time.Now()
}

// REQUIRES: n.mu is held exclusively.
func (n *memNode) truncate(size int) {
	old := len(n.data)
	switch {
	case size == 0:
		n.data = nil
	case size <= old:
		n.data = n.data[:size]
	default:
		n.unshareBelow(old)
		n.data = append(n.data, make([]byte, size-old)...)
	}
	n.dirty = min(n.dirty, size, old)
	n.modTime = time.Now()
}

// REQUIRES: n.mu is held exclusively.
func (n *memNode) sync() {
	n.synced = n.data[:len(n.data):len(n.data)]
	n.shared = true
	n.dirty = len(n.data)
}

// REQUIRES: n.mu is held (at least for reading).
func (n *memNode) size() int64 {
	if n.isDir {
		return 0
	}
	return int64(len(n.data))
}

func (n *memNode) info(name string) os.FileInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return &memFileInfo{name: name, size: n.size(), dir: n.isDir, modTime: n.modTime}
}

type memFileInfo struct {
	name    string
	size    int64
	dir     bool
	modTime time.Time
}

func (fi *memFileInfo) Name() string       { return fi.name }
func (fi *memFileInfo) Size() int64        { return fi.size }
func (fi *memFileInfo) ModTime() time.Time { return fi.modTime }
func (fi *memFileInfo) IsDir() bool        { return fi.dir }
func (fi *memFileInfo) Sys() any           { return nil }
func (fi *memFileInfo) Mode() os.FileMode {
	if fi.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// memFile is an open handle of a MemFS file.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool
	closed   atomic.Bool
}

var _ File = (*memFile)(nil)

func (f *memFile) check(op string) error {
	if f.closed.Load() {
		return pathErr(op, f.name, os.ErrClosed)
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, pathErr("write", f.name, syscall.EBADF)
	}
	f.fs.mu.RLock()
	f.n.mu.Lock()
	f.n.append(p)
	f.n.mu.Unlock()
	f.fs.mu.RUnlock()
	f.fs.notify(OpWrite, f.name)
	return len(p), nil
}

var errNegativeOffset = errors.New("negative offset")

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, errNegativeOffset)
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *memFile) Sync() error {
	if err := f.check("sync"); err != nil {
		return err
	}
	f.fs.mu.RLock()
	f.n.mu.Lock()
	f.n.sync()
	f.n.mu.Unlock()
	f.fs.mu.RUnlock()
	f.fs.notify(OpSync, f.name)
	return nil
}

func (f *memFile) Size() (int64, error) {
	if err := f.check("stat"); err != nil {
		return 0, err
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	return f.n.size(), nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate"); err != nil {
		return err
	}
	if !f.writable || size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.fs.mu.RLock()
	f.n.mu.Lock()
	f.n.truncate(int(size))
	f.n.mu.Unlock()
	f.fs.mu.RUnlock()
	f.fs.notify(OpTruncate, f.name)
	return nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}
