package vfs

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// MemFS is an in-memory FS that keeps, next to the current state, the state
// a crash would leave, following the durability model of the package doc:
//
//   - each file is an inode with its current content and its synced content
//     (the content at its last Sync); a renamed file keeps its inode, and a
//     file removed while open stays readable and writable through its open
//     handles;
//   - each directory has its current entries and its durable entries (name
//     to inode, as of its last SyncDir). Create of a new name, Rename, Remove
//     and Lock (when it creates the lock file) change only the current
//     entries.
//   - MkdirAll is the exception: the directories it creates are durable at
//     once (real file systems need an fsync of the parent for that too; the
//     engine creates its directory once, before anything that matters).
//
// CrashClone returns the state a crash at this moment could leave.
//
// Paths are cleaned with filepath.Clean and resolved from one root: "a/b",
// "./a/b" and "/a/b" name the same file, and ".." at the root stays there.
// There are no symlinks and no permissions; the perm of MkdirAll is ignored.
// Errors are *os.PathError or *os.LinkError values wrapping the errno Linux
// would return, so errors.Is(err, os.ErrNotExist) and the like hold.
//
// Differences from Default worth knowing: Open of a directory fails with
// EISDIR; Stat reports size 0 for directories.
//
// A MemFS is safe for concurrent use under the contract in the package doc.
type MemFS struct {
	// mu guards the tree: every directory's children and durable maps,
	// pending and locks. File contents are guarded by each inode's own
	// mutex; operations that change contents also hold mu.RLock, so that
	// CrashClone, which holds mu exclusively, sees all files at one instant.
	mu   sync.RWMutex
	root *memNode
	// pending lists directory changes not yet made durable by SyncDir,
	// oldest first (used by CrashOptions.RandomDirOps).
	pending []dirOp
	locks   map[string]bool
	hook    atomic.Pointer[func(Op, string)]
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty MemFS: only the root directory exists.
func NewMem() *MemFS {
	return &MemFS{root: newDir(), locks: make(map[string]bool)}
}

// A dirOp is one directory operation: a Rename changes two entries, the
// others one.
type dirOp []dirChange

type dirChange struct {
	dir  *memNode
	name string
	node *memNode // nil: the entry was removed
}

// SetDurabilityHook installs fn (nil removes it). fn is called after every
// successful operation that changes the file system: OpCreate, OpWrite,
// OpSync, OpTruncate, OpRemove, OpRename (name is the new name), OpMkdir
// (when a directory was created), OpLock (when the lock file was created)
// and OpSyncDir. name is the path the caller passed.
//
// fn runs on the goroutine that made the call, after the operation is
// complete and while no MemFS lock is held, so it may call any MemFS method,
// CrashClone included. The operation's caller waits for fn; if other
// goroutines use the FS concurrently, fn sees the state at some moment after
// the operation, not necessarily right after it. fn must be safe for
// concurrent calls if the FS is used concurrently.
func (fs *MemFS) SetDurabilityHook(fn func(op Op, name string)) {
	if fn == nil {
		fs.hook.Store(nil)
		return
	}
	fs.hook.Store(&fn)
}

func (fs *MemFS) notify(op Op, name string) {
	if fn := fs.hook.Load(); fn != nil {
		(*fn)(op, name)
	}
}

// splitPath turns name into its components below the root.
func splitPath(name string) []string {
	var parts []string
	for _, p := range strings.Split(filepath.ToSlash(filepath.Clean(name)), "/") {
		if p != "" && p != "." && p != ".." {
			parts = append(parts, p)
		}
	}
	return parts
}

// walk returns the directory named by parts.
// REQUIRES: fs.mu is held.
func (fs *MemFS) walk(op, name string, parts []string) (*memNode, error) {
	d := fs.root
	for _, p := range parts {
		n := d.children[p]
		switch {
		case n == nil:
			return nil, pathErr(op, name, syscall.ENOENT)
		case !n.isDir:
			return nil, pathErr(op, name, syscall.ENOTDIR)
		}
		d = n
	}
	return d, nil
}

// parent returns the directory holding name and name's last component,
// which is "" for the root.
// REQUIRES: fs.mu is held.
func (fs *MemFS) parent(op, name string) (*memNode, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return fs.root, "", nil
	}
	d, err := fs.walk(op, name, parts[:len(parts)-1])
	return d, parts[len(parts)-1], err
}

// lookup returns the node named by name.
// REQUIRES: fs.mu is held.
func (fs *MemFS) lookup(op, name string) (*memNode, error) {
	d, base, err := fs.parent(op, name)
	if err != nil || base == "" {
		return d, err
	}
	if n := d.children[base]; n != nil {
		return n, nil
	}
	return nil, pathErr(op, name, syscall.ENOENT)
}

// lookupFile is lookup for a regular file.
// REQUIRES: fs.mu is held.
func (fs *MemFS) lookupFile(op, name string) (*memNode, error) {
	n, err := fs.lookup(op, name)
	if err == nil && n.isDir {
		err = pathErr(op, name, syscall.EISDIR)
	}
	return n, err
}

// setEntry points name in d at n (nil removes it) in the current entries,
// remembering the change as pending until d is synced.
// REQUIRES: fs.mu is held exclusively.
func (fs *MemFS) setEntry(d *memNode, name string, n *memNode) {
	fs.pending = append(fs.pending, dirOp{{dir: d, name: name, node: n}})
	if n == nil {
		delete(d.children, name)
	} else {
		d.children[name] = n
	}
}

// setDurableEntry points name in d at n in both the current and the durable
// entries and forgets pending changes of that entry.
// REQUIRES: fs.mu is held exclusively.
func (fs *MemFS) setDurableEntry(d *memNode, name string, n *memNode) {
	d.children[name] = n
	d.durable[name] = n
	fs.dropPending(func(c dirChange) bool { return c.dir == d && c.name == name })
}

// dropPending removes the pending changes for which drop is true.
// REQUIRES: fs.mu is held exclusively.
func (fs *MemFS) dropPending(drop func(dirChange) bool) {
	ops := fs.pending[:0]
	for _, op := range fs.pending {
		op = slices.DeleteFunc(op, drop)
		if len(op) > 0 {
			ops = append(ops, op)
		}
	}
	clear(fs.pending[len(ops):])
	fs.pending = ops
}

// Create implements FS.
func (fs *MemFS) Create(name string) (File, error) {
	fs.mu.Lock()
	d, base, err := fs.parent("open", name)
	var n *memNode
	switch {
	case err != nil:
	case base == "":
		err = pathErr("open", name, syscall.EISDIR)
	default:
		n = d.children[base]
		switch {
		case n == nil:
			n = newFile()
			fs.setEntry(d, base, n)
		case n.isDir:
			err = pathErr("open", name, syscall.EISDIR)
		default:
			n.mu.Lock()
			n.truncate(0)
			n.mu.Unlock()
		}
	}
	fs.mu.Unlock()
	if err != nil {
		return nil, err
	}
	fs.notify(OpCreate, name)
	return &memFile{fs: fs, n: n, name: name, writable: true}, nil
}

// Open implements FS.
func (fs *MemFS) Open(name string) (File, error) { return fs.open(name, false) }

// OpenReadWrite implements FS.
func (fs *MemFS) OpenReadWrite(name string) (File, error) { return fs.open(name, true) }

func (fs *MemFS) open(name string, writable bool) (File, error) {
	fs.mu.RLock()
	n, err := fs.lookupFile("open", name)
	fs.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &memFile{fs: fs, n: n, name: name, writable: writable}, nil
}

// Remove implements FS.
func (fs *MemFS) Remove(name string) error {
	return fs.mutate(OpRemove, name, func() error { return fs.remove(name) })
}

// REQUIRES: fs.mu is held exclusively.
func (fs *MemFS) remove(name string) error {
	d, base, err := fs.parent("remove", name)
	if err != nil {
		return err
	}
	n := d.children[base]
	switch {
	case base == "":
		return pathErr("remove", name, syscall.EBUSY)
	case n == nil:
		return pathErr("remove", name, syscall.ENOENT)
	case n.isDir && len(n.children) > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	fs.setEntry(d, base, nil)
	return nil
}

// Link implements Linker: newname becomes a second name of oldname's file
// (a hard link: one content, written through either name), durable once
// newname's directory is synced. Like link(2) it fails when newname exists
// or oldname is a directory.
func (fs *MemFS) Link(oldname, newname string) error {
	return fs.mutate(OpLink, newname, func() error {
		fail := func(errno error) error { return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errno} }
		src, err := fs.lookupFile("link", oldname)
		if err != nil {
			return fail(err.(*os.PathError).Err)
		}
		d, base, err := fs.parent("link", newname)
		switch {
		case err != nil:
			return fail(err.(*os.PathError).Err)
		case base == "" || d.children[base] != nil:
			return fail(syscall.EEXIST)
		}
		fs.setEntry(d, base, src)
		return nil
	})
}

// Rename implements FS. Like os.Rename on Linux, it replaces an existing
// file, fails with EEXIST when newname is a directory, and moves a directory
// to a name that does not exist yet (not into its own subtree).
func (fs *MemFS) Rename(oldname, newname string) error {
	return fs.mutate(OpRename, newname, func() error { return fs.rename(oldname, newname) })
}

// mutate runs change under fs.mu held exclusively and, when it succeeds,
// reports op on name to the durability hook (outside the lock).
func (fs *MemFS) mutate(op Op, name string, change func() error) error {
	fs.mu.Lock()
	err := change()
	fs.mu.Unlock()
	if err != nil {
		return err
	}
	fs.notify(op, name)
	return nil
}

// REQUIRES: fs.mu is held exclusively.
func (fs *MemFS) rename(oldname, newname string) error {
	fail := func(errno error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errno}
	}
	od, ob, err := fs.parent("rename", oldname)
	if err != nil {
		return fail(err.(*os.PathError).Err)
	}
	nd, nb, err := fs.parent("rename", newname)
	if err != nil {
		return fail(err.(*os.PathError).Err)
	}
	if ob == "" || nb == "" {
		return fail(syscall.EBUSY)
	}
	src, dst := od.children[ob], nd.children[nb]
	switch {
	case src == nil:
		return fail(syscall.ENOENT)
	case dst != nil && dst.isDir:
		return fail(syscall.EEXIST) // as os.Rename, which refuses any directory as newname
	case src == dst:
		return nil // rename(2) of a name onto itself does nothing
	case src.isDir && dst != nil:
		return fail(syscall.ENOTDIR)
	case src.isDir && isPrefix(splitPath(oldname), splitPath(newname)):
		return fail(syscall.EINVAL) // a directory into its own subtree
	}
	fs.pending = append(fs.pending, dirOp{{dir: od, name: ob}, {dir: nd, name: nb, node: src}})
	delete(od.children, ob)
	nd.children[nb] = src
	return nil
}

func isPrefix(prefix, parts []string) bool {
	return len(prefix) <= len(parts) && slices.Equal(prefix, parts[:len(prefix)])
}

// MkdirAll implements FS. Directories it creates are durable at once.
func (fs *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	fs.mu.Lock()
	created := false
	d := fs.root
	var err error
	parts := splitPath(dir)
	for i, p := range parts {
		n := d.children[p]
		if n == nil {
			n = newDir()
			fs.setDurableEntry(d, p, n)
			created = true
		} else if !n.isDir {
			err = pathErr("mkdir", strings.Join(parts[:i+1], "/"), syscall.ENOTDIR)
			break
		}
		d = n
	}
	fs.mu.Unlock()
	if err != nil {
		return err
	}
	if created {
		fs.notify(OpMkdir, dir)
	}
	return nil
}

// List implements FS.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	d, err := fs.lookup("open", dir)
	if err != nil {
		return nil, err
	}
	if !d.isDir {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(d.children)), nil
}

// Stat implements FS.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	n, err := fs.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(filepath.Clean(name))
	return n.info(base), nil
}

// Lock implements FS. The lock is held until the returned Closer is closed;
// it belongs to this MemFS only (a CrashClone starts without locks).
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	fs.mu.Lock()
	key := strings.Join(splitPath(name), "/")
	created, err := fs.lock(name, key)
	fs.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if created {
		fs.notify(OpLock, name)
	}
	return &memLock{fs: fs, key: key, name: name}, nil
}

// REQUIRES: fs.mu is held exclusively.
func (fs *MemFS) lock(name, key string) (created bool, err error) {
	if fs.locks[key] {
		return false, &os.PathError{Op: "lock", Path: name, Err: &lockHeldError{by: "this process"}}
	}
	d, base, err := fs.parent("open", name)
	if err != nil {
		return false, err
	}
	n := d.children[base]
	switch {
	case base == "" || n != nil && n.isDir:
		return false, pathErr("open", name, syscall.EISDIR)
	case n == nil:
		fs.setEntry(d, base, newFile())
		created = true
	}
	fs.locks[key] = true
	return created, nil
}

type memLock struct {
	fs       *MemFS
	key      string
	name     string
	released atomic.Bool
}

func (l *memLock) Close() error {
	if l.released.Swap(true) {
		return pathErr("unlock", l.name, os.ErrClosed)
	}
	l.fs.mu.Lock()
	delete(l.fs.locks, l.key)
	l.fs.mu.Unlock()
	return nil
}

// SyncDir implements FS: the current entries of dir become its durable
// entries. Called on a regular file, it syncs the file, as fsync(2) on a
// descriptor of that file would.
func (fs *MemFS) SyncDir(dir string) error {
	fs.mu.Lock()
	n, err := fs.lookup("open", dir)
	if err == nil {
		if n.isDir {
			n.durable = maps.Clone(n.children)
			fs.dropPending(func(c dirChange) bool { return c.dir == n })
		} else {
			n.mu.Lock()
			n.sync()
			n.mu.Unlock()
		}
	}
	fs.mu.Unlock()
	if err != nil {
		return err
	}
	fs.notify(OpSyncDir, dir)
	return nil
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}
