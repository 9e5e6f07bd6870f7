// Package vfs is the file-system interface through which sieve performs
// every file operation, with an implementation over the operating system
// (Default), an in-memory one that tracks what has been made durable
// (NewMem), and fault-injecting wrappers for crash and error tests
// (NewErrorFS, NewSkipSyncFS). Only sieve's own packages and tests are
// expected to call it, but it is a plain public API.
//
// # Durability model
//
// What MemFS simulates on a crash (power loss: the page cache is gone), and
// therefore what the engine must do on a real disk:
//   - file data is durable only up to the last File.Sync of the file
//     (through any of its handles); that includes a Truncate;
//   - a directory entry (a created, renamed or removed name) is durable only
//     after SyncDir on its parent directory, and then it points at the same
//     file (inode) it points at in memory: a rename never moves data, a file
//     removed without a SyncDir comes back with its synced content;
//   - directories made by MkdirAll are durable at once (a simplification:
//     the engine makes its directory once, before anything it must keep).
//
// So a new file is safe after File.Sync and a SyncDir of its directory,
// and "write temp, Sync, Rename over the old name, SyncDir" replaces a
// file atomically. A failed Sync must not be retried: the data's state is
// unknown (an ErrorFS-injected failure leaves it unsynced; a real kernel may
// have dropped the dirty pages and cleared the error).
//
// MemFS.CrashClone returns the state a crash could leave, strictly (only
// what the rules above make durable) or with a random part of the unsynced
// data, zeros or garbage in unsynced regions, and a random prefix of the
// un-synced directory operations (see CrashOptions). MemFS's durability hook
// lets a test take a clone after every mutation.
//
// # Fault injection
//
// ErrorFS counts operations by kind (Op) and fails the Nth chosen one, once
// or from then on, with an error wrapping ErrInjected, and can run out of
// space (ENOSPC). SkipSyncFS turns the Nth sync into a silent no-op, to show
// that a crash test notices each missing fsync. Both wrap the Files they
// open, so reads, writes and syncs through them are counted too.
//
// # Concurrency
//
// An FS may be used from many goroutines at once. A File may be read with
// ReadAt and Size from many goroutines at once, also while one goroutine
// writes it; but Write, Sync, Truncate and Close must not run concurrently
// with each other on the same File, and nothing may use a File once Close
// has begun. MemFS's test helpers (CrashClone, Corrupt, ...) may be called
// at any time from any goroutine.
package vfs

import (
	"errors"
	"io"
	"os"
)

// ErrLocked is wrapped by the error FS.Lock returns when the lock is already
// held, by this process or (for Default) another one.
var ErrLocked = errors.New("vfs: lock held")

// File is an open file. Files opened by Create or OpenReadWrite are written
// by appending with Write; files opened by Open are read-only.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync makes the file's data durable. A failed Sync must not be
	// retried by the caller: the state of the data is unknown.
	Sync() error
	// Size returns the file's current length in bytes.
	Size() (int64, error)
	// Truncate changes the file's length; the change is durable after Sync.
	Truncate(size int64) error
}

// FS is a file system. Names are paths as filepath builds them.
type FS interface {
	// Create creates the named file for writing, truncating it if it
	// exists. The new directory entry is durable only after SyncDir.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and appending
	// (writes go to the end of the file).
	OpenReadWrite(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if
	// needed. It fails if the lock is held, by this process or another,
	// with an error wrapping ErrLocked.
	// Closing the returned Closer releases the lock.
	Lock(name string) (io.Closer, error)
	// SyncDir makes the entries of dir (creations, renames, removals)
	// durable.
	SyncDir(dir string) error
}
