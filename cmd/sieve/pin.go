package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/vfs"
)

// pinFS is a read-only view of a database directory as it was at one
// moment, for "sieve get" and "sieve scan" on a database that another
// process may be writing: every file of the directory is opened once, up
// front, and the engine's read-only Open reads those handles, never the
// directory again. A writer that meanwhile compacts, flushes, deletes
// tables and WALs or rotates the manifest changes nothing the view reads
// (on POSIX systems an open file outlives its removal), and the manifest
// is cut at the length it had when the view was taken, so edits appended
// later are not read either. The newest WAL may grow under the view: the
// read sees a prefix of it, which is a consistent state, as after a crash.
//
// The view is taken without the database's lock (so the writer keeps
// running and a writer may open the database while the tool reads) and is
// checked after the files are opened: CURRENT names the same manifest and
// the manifest has not grown. Otherwise an edit landed while the files
// were being opened (a table the view needs might have been deleted
// before it was opened), and pinDB takes the view again.
type pinFS struct {
	*roFS
	dir   string
	names []string          // the directory listing of the view
	files map[string]pinned // by base name
}

// pinned is one held file; limit >= 0 cuts it at limit bytes (the
// manifest), -1 reads it as it grows (the newest WAL).
type pinned struct {
	f     vfs.File
	limit int64
}

// pinAttempts bounds how many times pinDB retakes the view while a writer
// keeps changing the manifest.
const pinAttempts = 50

// pinDB takes a pinned view of the database in dir.
func pinDB(dir string) (*pinFS, error) {
	ro := newROFS()
	if err := ro.checkDB(dir); err != nil {
		return nil, err
	}
	var lastErr error
	for range pinAttempts {
		p, ok, err := tryPin(ro, dir)
		if err != nil {
			return nil, err
		}
		if ok {
			return p, nil
		}
		lastErr = fmt.Errorf("%s: the database changed while the tool opened its files, %d times; try again", dir, pinAttempts)
		time.Sleep(2 * time.Millisecond)
	}
	return nil, lastErr
}

// tryPin opens every file of dir and reports whether the view is
// consistent (ok); a file that vanished while listed, or a changed
// manifest, gives ok false.
func tryPin(ro *roFS, dir string) (p *pinFS, ok bool, err error) {
	man, size, err := currentManifestSize(ro, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil // CURRENT names a manifest just replaced
	}
	if err != nil {
		return nil, false, err
	}
	names, err := ro.inner.List(dir)
	if err != nil {
		return nil, false, err
	}
	p = &pinFS{roFS: ro, dir: dir, files: map[string]pinned{}}
	for _, name := range names {
		if t, _, known := base.ParseFilename(name); !known || t == base.FileTypeLock || t == base.FileTypeTemp {
			continue
		}
		f, err := ro.inner.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing: obsolete, or the check below fails
		}
		if err != nil {
			p.Close()
			return nil, false, err
		}
		p.files[name] = pinned{f: f, limit: -1}
		p.names = append(p.names, name)
	}
	m, held := p.files[man]
	// The held CURRENT, and the directory's now, must name the manifest
	// held: a rotation of the manifest during the opens (which may delete
	// tables) changes the directory's.
	heldCur, err1 := currentManifest(p, dir)
	dirCur, err2 := currentManifest(ro, dir)
	if !held || err1 != nil || err2 != nil || filepath.Base(heldCur) != man || filepath.Base(dirCur) != man {
		p.Close()
		return nil, false, nil
	}
	if grown, err := m.f.Size(); err != nil || grown != size {
		p.Close()
		return nil, false, nil
	}
	p.files[man] = pinned{f: m.f, limit: size}
	return p, true, nil
}

// currentManifestSize reads CURRENT and returns the manifest it names and
// that manifest's size.
func currentManifestSize(ro *roFS, dir string) (string, int64, error) {
	path, err := currentManifest(ro, dir)
	if err != nil {
		return "", 0, err
	}
	st, err := ro.inner.Stat(path)
	if err != nil {
		return "", 0, err
	}
	return filepath.Base(path), st.Size(), nil
}

// Close releases every held file.
func (p *pinFS) Close() {
	for _, f := range p.files {
		f.f.Close()
	}
	p.files = nil
}

// held returns the held file name stands for, if it is one of the view's.
func (p *pinFS) held(name string) (pinned, bool) {
	if filepath.Clean(filepath.Dir(name)) != filepath.Clean(p.dir) {
		return pinned{}, false
	}
	f, ok := p.files[filepath.Base(name)]
	return f, ok
}

func (p *pinFS) Open(name string) (vfs.File, error) {
	f, ok := p.held(name)
	if !ok {
		if filepath.Clean(filepath.Dir(name)) == filepath.Clean(p.dir) {
			// Not in the view: created after it was taken.
			return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return p.roFS.Open(name)
	}
	return heldFile{roFile{f.f, name}, f.limit}, nil
}

func (p *pinFS) List(dir string) ([]string, error) {
	if filepath.Clean(dir) == filepath.Clean(p.dir) {
		return append([]string(nil), p.names...), nil
	}
	return p.roFS.List(dir)
}

func (p *pinFS) Stat(name string) (os.FileInfo, error) {
	st, err := p.roFS.Stat(name)
	if f, ok := p.held(name); ok {
		size, serr := heldFile{roFile{f.f, name}, f.limit}.Size()
		if serr != nil {
			return nil, serr
		}
		return heldInfo{name: filepath.Base(name), size: size}, nil
	} else if err == nil && !st.IsDir() && filepath.Clean(filepath.Dir(name)) == filepath.Clean(p.dir) {
		return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return st, err
}

// Lock takes nothing: the view needs no lock, and taking it would keep a
// writer from opening the database while the tool reads.
func (p *pinFS) Lock(name string) (io.Closer, error) { return nopCloser{}, nil }

// heldFile is a held file read through the view: Close leaves it open
// (the view closes it), and a limit cuts it.
type heldFile struct {
	roFile
	limit int64
}

func (h heldFile) Close() error { return nil }

func (h heldFile) Size() (int64, error) {
	n, err := h.roFile.Size()
	if err == nil && h.limit >= 0 && n > h.limit {
		n = h.limit
	}
	return n, err
}

func (h heldFile) ReadAt(b []byte, off int64) (int, error) {
	if h.limit < 0 {
		return h.roFile.ReadAt(b, off)
	}
	if off >= h.limit {
		return 0, io.EOF
	}
	if rest := h.limit - off; int64(len(b)) > rest {
		n, err := h.roFile.ReadAt(b[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return h.roFile.ReadAt(b, off)
}

// heldInfo describes a held file (its size as the view reads it).
type heldInfo struct {
	name string
	size int64
}

func (i heldInfo) Name() string       { return i.name }
func (i heldInfo) Size() int64        { return i.size }
func (i heldInfo) Mode() os.FileMode  { return 0o444 }
func (i heldInfo) ModTime() time.Time { return time.Time{} }
func (i heldInfo) IsDir() bool        { return false }
func (i heldInfo) Sys() any           { return nil }
