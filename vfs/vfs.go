// Package vfs is the file-system interface through which sieve performs
// every file operation, with an implementation over the operating system
// (Default), an in-memory one that tracks what has been made durable
// (NewMem), and fault-injecting wrappers for crash and error tests.
//
// Durability model (what the in-memory FS simulates on a crash, and what the
// engine must therefore do on a real disk):
//   - file data is durable only up to the last File.Sync;
//   - a directory entry (a created, renamed or removed name) is durable only
//     after SyncDir on its parent directory.
//
// Concurrency: an FS may be used from many goroutines at once. A File may be
// read with ReadAt from many goroutines at once, but Write, Sync, Truncate
// and Close must not run concurrently with each other on the same File.
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
	// needed. It fails if the lock is held, by this process or another.
	// Closing the returned Closer releases the lock.
	Lock(name string) (io.Closer, error)
	// SyncDir makes the entries of dir (creations, renames, removals)
	// durable.
	SyncDir(dir string) error
}
