package sieve

import (
	"errors"

	"github.com/sievedb/sieve/internal/base"
)

var (
	// ErrNotFound is returned by Get when the key has no value.
	ErrNotFound = errors.New("sieve: not found")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("sieve: database closed")
	// ErrCorruption marks errors caused by bad bytes on disk; the wrapping
	// error names the file, offset and failed check.
	ErrCorruption = base.ErrCorruption
	// ErrReadOnly is returned by writes to a database opened ReadOnly.
	ErrReadOnly = errors.New("sieve: database is read-only")
	// ErrInvalidOptions wraps every Options validation failure.
	ErrInvalidOptions = errors.New("sieve: invalid options")
	// ErrNoMerger is returned by Merge on a column family without a merger.
	ErrNoMerger = errors.New("sieve: column family has no merger")
	// ErrTooLarge is returned when a key, value or batch exceeds its limit.
	ErrTooLarge = errors.New("sieve: too large")
	// ErrInvalidRange is returned by DeleteRange for start > end.
	ErrInvalidRange = errors.New("sieve: invalid range")
	// ErrLeaked is returned by Close when iterators or snapshots were
	// still open (the DB closes all the same; the error says how many).
	ErrLeaked = errors.New("sieve: iterators or snapshots still open at Close")
	// ErrLocked is returned by Open when another DB holds the directory.
	ErrLocked = errors.New("sieve: database directory is locked by another DB")
)
