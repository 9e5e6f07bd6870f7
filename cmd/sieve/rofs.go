package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/sievedb/sieve/vfs"
)

// errReadOnly is what every mutating operation of roFS returns.
var errReadOnly = errors.New("the sieve tool never changes a file")

// roFS is the only file system the tool uses: it passes reads through to
// inner and refuses everything that could change the directory or a file
// (create, open for writing, remove, rename, mkdir, write, truncate, sync).
// So a read-only Open of the database cannot change it even if it tried.
//
// Lock takes the database's lock when it is free, so that no writer opens
// the database while the tool reads it; when another process (or this one)
// holds it, the tool reads the database anyway, read-only, and lockedBy
// records that (files may then change or disappear under the tool, which
// reports that as an error). A directory without a LOCK file is read
// without one: taking the lock would create the file. So is one whose LOCK
// cannot be opened for writing (read-only media), recorded in lockErr.
type roFS struct {
	inner vfs.FS
	// heldElsewhere is set when Lock found the lock held; lockErr holds
	// the error of a Lock that failed otherwise.
	heldElsewhere atomic.Bool
	lockErr       atomic.Pointer[error]
}

func newROFS() *roFS { return &roFS{inner: vfs.Default} }

func refuse(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: errReadOnly}
}

func (r *roFS) Create(name string) (vfs.File, error) { return nil, refuse("create", name) }

func (r *roFS) Open(name string) (vfs.File, error) {
	f, err := r.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return roFile{f, name}, nil
}

func (r *roFS) OpenReadWrite(name string) (vfs.File, error) {
	return nil, refuse("open for writing", name)
}
func (r *roFS) Remove(name string) error                    { return refuse("remove", name) }
func (r *roFS) Rename(oldname, newname string) error        { return refuse("rename", oldname) }
func (r *roFS) MkdirAll(dir string, perm os.FileMode) error { return refuse("mkdir", dir) }
func (r *roFS) List(dir string) ([]string, error)           { return r.inner.List(dir) }
func (r *roFS) Stat(name string) (os.FileInfo, error)       { return r.inner.Stat(name) }
func (r *roFS) SyncDir(dir string) error                    { return refuse("sync", dir) }

func (r *roFS) Lock(name string) (io.Closer, error) {
	if _, err := r.inner.Stat(name); errors.Is(err, fs.ErrNotExist) {
		return nopCloser{}, nil
	}
	l, err := r.inner.Lock(name)
	switch {
	case errors.Is(err, vfs.ErrLocked):
		r.heldElsewhere.Store(true)
		return nopCloser{}, nil
	case err != nil:
		// Taking the lock opens LOCK for writing, which a read-only
		// medium or a user without write permission cannot do: read
		// without it.
		r.lockErr.Store(&err)
		return nopCloser{}, nil
	}
	return l, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// roFile is a file opened for reading; writes are refused.
type roFile struct {
	vfs.File
	name string
}

func (f roFile) Write(p []byte) (int, error) { return 0, refuse("write", f.name) }
func (f roFile) Sync() error                 { return refuse("sync", f.name) }
func (f roFile) Truncate(size int64) error   { return refuse("truncate", f.name) }

// openFile opens a file a command was given, refusing a directory.
func (r *roFS) openFile(path, what string) (vfs.File, error) {
	if st, err := r.inner.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not %s", path, what)
	}
	return r.Open(path)
}

// checkDB reports a directory that holds no database in plainer words
// than "open DIR/CURRENT: no such file or directory".
func (r *roFS) checkDB(dir string) error {
	st, err := r.inner.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if _, err := r.inner.Stat(filepath.Join(dir, "CURRENT")); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no sieve database here (no CURRENT file)", dir)
	}
	return nil
}
