package sieve

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/sstable"
	"github.com/sievedb/sieve/vfs"
)

// externalIDLen is the length of an external table's random ID.
const externalIDLen = 16

// ExternalTableWriter writes an external table: a table in sieve's own
// format (sstable/FORMAT.md), made outside any database, that DB.Ingest
// adds to one (RocksDB's SstFileWriter). Its keys are Sets, given in
// strictly increasing order; it carries a filter (Options.FilterPolicy,
// with Options.Prefix's prefixes) and a random ID that the database
// remembers once it is ingested. Call order: NewExternalTableWriter Set*
// Close. A writer is not safe for concurrent use.
type ExternalTableWriter struct {
	fs     vfs.FS
	path   string
	f      vfs.File
	w      *sstable.Writer
	last   []byte
	n      int
	closed bool
}

// NewExternalTableWriter creates the external table path (on o.FS, the OS
// by default), replacing any file there. o's table options apply: block
// size, restart interval, compression, FilterPolicy, Prefix (nil: the
// defaults).
func NewExternalTableWriter(path string, o *Options) (*ExternalTableWriter, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	id := make([]byte, externalIDLen)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("sieve: external table ID: %w", err)
	}
	f, err := opts.FS.Create(path)
	if err != nil {
		return nil, err
	}
	wo := sstable.WriterOptions{
		BlockSize: opts.BlockSize, BlockRestartInterval: opts.BlockRestartInterval,
		Compression: opts.Compression, FilterPolicy: opts.FilterPolicy,
		Prefix: opts.Prefix, PrefixName: opts.PrefixName, ExternalID: id,
	}
	return &ExternalTableWriter{fs: opts.FS, path: path, f: f, w: sstable.NewWriter(f, wo)}, nil
}

// errExternalClosed is returned by Set and Close after Close.
var errExternalClosed = errors.New("sieve: external table writer closed")

// Set adds key with value. Keys must be strictly increasing (bytewise);
// a key that is not, or too large a key or value, is refused with an
// error and the writer stays usable.
func (w *ExternalTableWriter) Set(key, value []byte) error {
	if w.closed {
		return errExternalClosed
	}
	if len(key) > MaxKeySize || len(value) > MaxValueSize {
		return fmt.Errorf("%w: external table key of %d bytes, value of %d", ErrTooLarge, len(key), len(value))
	}
	if w.n > 0 && bytes.Compare(key, w.last) <= 0 {
		return fmt.Errorf("sieve: external table %s: key %q is not after %q", w.path, key, w.last)
	}
	if err := w.w.Add(base.MakeInternalKey(key, 0, base.KindSet), value); err != nil {
		return err
	}
	w.last = append(w.last[:0], key...)
	w.n++
	return nil
}

// Close finishes the table, fsyncs it and its directory, and closes it.
// On an error the file is removed.
func (w *ExternalTableWriter) Close() error {
	if w.closed {
		return errExternalClosed
	}
	w.closed = true
	_, err := w.w.Finish()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.fs.SyncDir(filepath.Dir(w.path))
	}
	if err != nil {
		w.fs.Remove(w.path)
		return fmt.Errorf("sieve: external table %s: %w", w.path, err)
	}
	return nil
}
