package vfs

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"syscall"
)

// This file holds MemFS helpers for tests: reading and planting files,
// damaging them the way a bad disk would, and a dump of the tree. None of
// them calls the durability hook.

// ReadFile returns a copy of the current content of the named file.
func (fs *MemFS) ReadFile(name string) ([]byte, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	n, err := fs.lookupFile("open", name)
	if err != nil {
		return nil, err
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.Clone(n.data), nil
}

// WriteFile creates or replaces the named file with data, durably: the
// content is synced and the directory entry durable, as if the file had been
// written, synced and its directory synced. The parent directory must exist.
// A replaced file keeps its inode (open handles see the new content).
func (fs *MemFS) WriteFile(name string, data []byte) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, base, err := fs.parent("open", name)
	if err != nil {
		return err
	}
	n := d.children[base]
	switch {
	case base == "" || n != nil && n.isDir:
		return pathErr("open", name, syscall.EISDIR)
	case n == nil:
		n = newFile()
	}
	fs.setDurableEntry(d, base, n)
	n.mu.Lock()
	n.data = slices.Clone(data)
	n.shared = false
	n.dirty = 0
	n.sync()
	n.mu.Unlock()
	return nil
}

// Corrupt overwrites the bytes of the named file at off with p, in both its
// current and its synced content: the medium itself is damaged, so the
// change survives a crash. The range must lie within the current content
// (the synced content is changed where it reaches).
func (fs *MemFS) Corrupt(name string, off int64, p []byte) error {
	return fs.damage("corrupt", name, off, int64(len(p)), func(b []byte) { copy(b, p) })
}

// FlipBit inverts bit (0 is the least significant) of the byte at off of the
// named file, in both its current and its synced content, like Corrupt.
func (fs *MemFS) FlipBit(name string, off int64, bit uint) error {
	return fs.damage("flipbit", name, off, 1, func(b []byte) { b[0] ^= 1 << (bit % 8) })
}

// damage applies fn to the bytes [off, off+n) of the current content of the
// named file and to those of its synced content that exist.
func (fs *MemFS) damage(op, name string, off, n int64, fn func([]byte)) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, err := fs.lookupFile(op, name)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if off < 0 || off+n > int64(len(f.data)) {
		return pathErr(op, name, fmt.Errorf("range [%d,%d) outside the file's %d bytes", off, off+n, len(f.data)))
	}
	f.data, f.synced, f.shared = slices.Clone(f.data), slices.Clone(f.synced), false
	fn(f.data[off : off+n])
	if off < int64(len(f.synced)) {
		// Damaging both copies alike keeps data[:dirty] == synced[:dirty].
		fn(f.synced[off:min(off+n, int64(len(f.synced)))])
	}
	return nil
}

// Truncate sets the length of the named file, both current and synced, to
// size: a torn tail (or, growing, a zero-filled one) that survives a crash.
func (fs *MemFS) Truncate(name string, size int64) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, err := fs.lookupFile("truncate", name)
	if err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", name, syscall.EINVAL)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = overwrite(slices.Clone(f.data[:min(int64(len(f.data)), size)]), int(size), nil)
	f.shared = false
	f.dirty = 0
	f.sync()
	return nil
}

// String dumps the tree, one line per entry in path order: directories end
// in "/", files show their current and synced sizes, and entries whose
// current state is not yet durable are marked, including removed or renamed
// names that a crash would bring back.
//
//	db/
//	db/000001.log size=120 synced=100
//	db/CURRENT size=16 synced=16 [entry not durable]
//	db/old.sst size=50 synced=50 [removed, entry durable]
func (fs *MemFS) String() string {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	var b strings.Builder
	fs.dump(&b, fs.root, "", map[*memNode]bool{})
	return b.String()
}

// REQUIRES: fs.mu is held.
func (fs *MemFS) dump(b *strings.Builder, d *memNode, prefix string, onPath map[*memNode]bool) {
	onPath[d] = true
	defer delete(onPath, d)
	names := slices.Sorted(maps.Keys(d.children))
	for name := range d.durable {
		if _, ok := d.children[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		cur, dur := d.children[name], d.durable[name]
		n := cur
		if n == nil {
			n = dur
		}
		p := path.Join(prefix, name)
		if n.isDir {
			fmt.Fprintf(b, "%s/", p)
		} else {
			n.mu.RLock()
			fmt.Fprintf(b, "%s size=%d synced=%d", p, len(n.data), len(n.synced))
			n.mu.RUnlock()
		}
		switch {
		case cur == nil:
			b.WriteString(" [removed, entry durable]")
		case dur == nil:
			b.WriteString(" [entry not durable]")
		case cur != dur:
			b.WriteString(" [replaced, entry not durable]")
		}
		b.WriteByte('\n')
		if n.isDir && !onPath[n] {
			fs.dump(b, n, p, onPath)
		}
	}
}
