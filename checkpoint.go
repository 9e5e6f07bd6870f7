package sieve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/vfs"
)

// Checkpoint writes a consistent copy of the database, every column family
// included, to the new directory dir (an error if it exists), on the DB's
// file system. Opening dir (with Open, read-write or read-only) gives
// exactly the writes acknowledged when Checkpoint pinned its state, and
// nothing later; the DB keeps serving reads and writes meanwhile (writes
// wait only while the state is pinned: a WAL buffer write, no copy).
//
// Tables are hard-linked where the file system allows (vfs.Linker) and
// copied otherwise; the WALs still needed are copied up to the last
// acknowledged write, and a new manifest describes only the live state.
// Everything is built in dir+".checkpoint-tmp" (removed first if a crash
// left it), synced, then renamed to dir and the parent directory synced:
// after a crash dir is either absent or complete. The source is only read.
// A read-only DB, or one made read-only by an error, returns an error.
func (db *DB) Checkpoint(dir string) error { return db.CheckpointContext(context.Background(), dir) }

// CheckpointContext is Checkpoint stopping with ctx's error between
// files; the partial checkpoint is removed (dir is not created).
func (db *DB) CheckpointContext(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := db.checkOpen(); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		return fmt.Errorf("%w: Checkpoint needs a writable database", ErrReadOnly)
	}
	dir = filepath.Clean(dir)
	if _, err := db.fs.Stat(dir); err == nil {
		return fmt.Errorf("sieve: checkpoint directory %s already exists", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tmp := dir + ".checkpoint-tmp"
	if err := removeDir(db.fs, tmp); err != nil {
		return fmt.Errorf("sieve: removing %s left by an earlier checkpoint: %w", tmp, err)
	}
	cp, err := db.pinCheckpoint()
	if err != nil {
		return err
	}
	defer cp.release()
	if err := db.fs.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := db.writeCheckpoint(ctx, cp, tmp); err != nil {
		removeDir(db.fs, tmp) // best effort; the next Checkpoint retries
		return fmt.Errorf("sieve: checkpoint %s: %w", dir, err)
	}
	if err := db.fs.Rename(tmp, dir); err != nil {
		return err
	}
	if err := db.fs.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	db.metrics.checkpoints.Add(1)
	db.opts.Logger.Info("checkpoint", "dir", dir, "tables", len(cp.tables), "wals", len(cp.wals))
	return nil
}

// checkpointState is what a checkpoint copies: the live tables (their
// version pinned, so that none is deleted before it is linked or copied),
// the WALs still needed, open (so that a flush deleting one cannot take its
// data away) with the length to copy, and the manifest snapshot.
type checkpointState struct {
	version *manifest.Version
	snap    *manifest.VersionEdit
	tables  []uint64
	wals    []checkpointWAL
}

type checkpointWAL struct {
	num  uint64
	f    vfs.File
	size int64
}

func (cp *checkpointState) release() {
	cp.version.Unref()
	for _, w := range cp.wals {
		w.f.Close()
	}
}

// pinCheckpoint pins the state a checkpoint copies. It holds the commit
// pipeline (no write in flight: the current WAL ends with the last
// acknowledged write once its buffer is written) and the manifest writer
// (no flush or compaction installs, and so no WAL or table is retired,
// while the version, the snapshot edit and the WALs are taken together).
func (db *DB) pinCheckpoint() (*checkpointState, error) {
	db.commit.acquire()
	defer db.commit.release()
	if db.closed.Load() {
		return nil, ErrClosed // Close took the pipeline first: the WAL is closed
	}
	db.versionMu.Lock()
	defer db.versionMu.Unlock()
	if err := db.checkWritable(); err != nil {
		return nil, err
	}
	if err := db.log.w.Flush(); err != nil {
		err = fmt.Errorf("WAL %s write: %w", base.FileName(base.FileTypeLog, db.log.num), err)
		db.setBackgroundError(err)
		return nil, err
	}
	cp := &checkpointState{}
	cp.version, cp.snap = db.versions.SnapshotForCheckpoint()
	for _, lv := range cp.version.CFs {
		for _, files := range lv {
			for _, f := range files {
				cp.tables = append(cp.tables, f.FileNum)
			}
		}
	}
	db.mu.Lock()
	wals := append([]uint64(nil), db.mu.wals...)
	db.mu.Unlock()
	for _, num := range wals {
		if num < cp.snap.LogNum {
			continue
		}
		if err := cp.openWAL(db, num); err != nil {
			cp.release()
			return nil, err
		}
	}
	return cp, nil
}

// openWAL opens WAL num for the copy, to its current length (the live
// WAL's bytes written so far: every acknowledged write).
func (cp *checkpointState) openWAL(db *DB, num uint64) error {
	f, err := db.fs.Open(base.MakeFilename(db.dirname, base.FileTypeLog, num))
	if err != nil {
		return err
	}
	size, err := f.Size()
	if num == db.log.num {
		size = db.log.w.Size()
	}
	if err != nil {
		f.Close()
		return err
	}
	cp.wals = append(cp.wals, checkpointWAL{num: num, f: f, size: size})
	return nil
}

// writeCheckpoint fills dir with the tables, the WALs and a manifest (its
// CURRENT last), all synced.
func (db *DB) writeCheckpoint(ctx context.Context, cp *checkpointState, dir string) error {
	for _, num := range cp.tables {
		if err := ctx.Err(); err != nil {
			return err
		}
		src := base.MakeFilename(db.dirname, base.FileTypeTable, num)
		dst := base.MakeFilename(dir, base.FileTypeTable, num)
		if err := vfs.Link(db.fs, src, dst); err == nil {
			db.metrics.checkpointLinks.Add(1)
			continue
		}
		if err := copyFile(db.fs, src, dst, -1); err != nil {
			return err
		}
		db.metrics.checkpointCopies.Add(1)
	}
	for _, w := range cp.wals {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := copyOpen(db.fs, w.f, base.MakeFilename(dir, base.FileTypeLog, w.num), w.size); err != nil {
			return err
		}
	}
	if err := db.fs.SyncDir(dir); err != nil {
		return err
	}
	// The manifest takes a number no table or WAL of the checkpoint has.
	num := cp.snap.NextFileNum
	return manifest.WriteCheckpointManifest(db.fs, dir, num, cp.snap)
}

// copyFile copies src to the new file dst (size bytes; -1 = all), synced.
func copyFile(fs vfs.FS, src, dst string, size int64) error {
	f, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if size < 0 {
		if size, err = f.Size(); err != nil {
			return err
		}
	}
	return copyOpen(fs, f, dst, size)
}

// copyOpen copies the first size bytes of f to the new file dst and syncs
// it.
func copyOpen(fs vfs.FS, f vfs.File, dst string, size int64) error {
	out, err := fs.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.NewSectionReader(f, 0, size))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeDir removes dir and the files in it, if it exists.
func removeDir(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := fs.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	if err := fs.Remove(dir); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(dir))
}
