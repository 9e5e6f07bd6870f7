package sieve

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/sievedb/sieve/vfs"
)

// LostDir is the folder, inside the database directory, where recovery
// and Repair put the files (or copies of files) they could not use in
// full. Nothing in sieve deletes it; it is the user's to inspect.
const LostDir = "lost"

// setAside moves the file name of the database directory dirname into
// dirname/lost (or, with keep, links or copies it there and leaves the
// original), and returns the new path. A name already taken in lost/ gets a
// numeric suffix. The new entry is synced (the file, when copied, and both
// directories) before it returns.
func setAside(fs vfs.FS, dirname, name string, keep bool) (string, error) {
	lost := path.Join(dirname, LostDir)
	if _, err := fs.Stat(lost); errors.Is(err, os.ErrNotExist) {
		if err := fs.MkdirAll(lost, 0o755); err != nil {
			return "", err
		}
		if err := fs.SyncDir(dirname); err != nil {
			return "", err
		}
	}
	src := path.Join(dirname, name)
	dst := path.Join(lost, name)
	for i := 1; ; i++ {
		if _, err := fs.Stat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = path.Join(lost, fmt.Sprintf("%s.%d", name, i))
	}
	var err error
	switch {
	case !keep:
		err = fs.Rename(src, dst)
	case vfs.Link(fs, src, dst) == nil:
	default:
		err = copyFile(fs, src, dst, -1)
	}
	if err != nil {
		return "", fmt.Errorf("sieve: setting %s aside in %s: %w", src, lost, err)
	}
	if err := fs.SyncDir(lost); err != nil {
		return "", err
	}
	if !keep {
		if err := fs.SyncDir(dirname); err != nil {
			return "", err
		}
	}
	return dst, nil
}
