package wal

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// WritableFile is what a Writer writes to: an append-only file. vfs.File
// satisfies it.
type WritableFile interface {
	io.Writer
	// Sync makes everything written so far durable.
	Sync() error
}

// A WritableFile may also have these methods (vfs's disk files do); a
// Writer uses them when it has them.
type (
	// dataSyncer syncs a file's data and the metadata needed to read it
	// back, not its timestamps (fdatasync): cheaper than Sync for a log.
	dataSyncer interface{ SyncData() error }
	// preallocator reserves disk blocks for [off, off+n) without changing
	// the file's size, so that appending there need not allocate.
	preallocator interface{ Preallocate(off, n int64) error }
)

// preallocChunk is how far ahead of its writes a Writer reserves blocks in
// a file that can preallocate.
const preallocChunk = 4 << 20

// ErrClosed is returned by every Writer method called after Close.
var ErrClosed = errors.New("wal: writer is closed")

// maxRetainedBuffer bounds the write buffer a Writer keeps between
// records. A commit group rarely needs more; a bigger buffer (after a
// huge batch) is dropped rather than pinned for the life of the log.
const maxRetainedBuffer = 4 << 20

// Writer appends records to a log file. See the package comment for the
// call order and concurrency rules, and FORMAT.md for the bytes.
type Writer struct {
	f      WritableFile
	logNum uint64

	// offset is the file size: every byte handed to f.Write so far.
	// synced is the offset through which f.Sync has succeeded. Both are
	// atomics only so that Size and SyncedOffset may be called from any
	// goroutine; all writes happen on the writer's goroutine.
	offset atomic.Int64
	synced atomic.Int64

	// err is sticky: once a write or sync fails, the file's contents past
	// the synced offset are unknown and nothing more may be written. It is
	// guarded by errMu because SyncWritten may fail on another goroutine
	// than the one writing.
	// failed is set (after err, under errMu) once err is: stickyErr's
	// lock-free check on every write.
	errMu  sync.Mutex
	err    error
	failed atomic.Bool
	closed bool

	buf    []byte // the bytes of one WriteRecord, handed to f in one Write
	digest xxhash.Digest

	// pa is f when it can preallocate (nil when not, or once it failed
	// to); blocks are reserved through offset prealloc.
	pa       preallocator
	prealloc int64
}

// NewWriter starts log logNum in f, which must be empty, by writing the
// file header. Nothing is synced until the first Sync (or Close).
func NewWriter(f WritableFile, logNum uint64) (*Writer, error) {
	w := &Writer{f: f, logNum: logNum}
	w.pa, _ = f.(preallocator)
	w.buf = appendFileHeader(&w.digest, w.buf[:0], logNum)
	if err := w.write(); err != nil {
		return nil, err
	}
	return w, nil
}

// WriteRecord appends p as one record and returns the file offset just
// past it. The record is not durable until Sync returns nil.
//
// The record's chunks and any block padding reach the file in a single
// Write. WriteRecord does not retain p.
func (w *Writer) WriteRecord(p []byte) (endOffset int64, err error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	w.appendRecord(p)
	if err := w.write(); err != nil {
		return 0, err
	}
	return w.offset.Load(), nil
}

// BufferRecord appends p as one record to the Writer's buffer without
// writing it, unless the buffer has reached flushThreshold bytes; Flush,
// Sync, a later WriteRecord or Close writes it. It lets a caller that does
// not need each record in the OS at once (unsynced writes) save a write
// system call per record. Records reach the file in order either way.
func (w *Writer) BufferRecord(p []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	w.appendRecord(p)
	if len(w.buf) >= flushThreshold {
		return w.write()
	}
	return nil
}

// flushThreshold is the buffered size at which BufferRecord writes.
const flushThreshold = 64 << 10

// Flush writes buffered records to the file (not syncing them).
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	if len(w.buf) == 0 {
		return nil
	}
	return w.write()
}

// Buffered returns the bytes buffered and not yet written to the file.
func (w *Writer) Buffered() int { return len(w.buf) }

// appendRecord appends the chunks of record p to w.buf.
func (w *Writer) appendRecord(p []byte) {
	first := true
	for {
		n := min(len(p), w.startChunk()-headerSize)
		last := n == len(p)
		t := chunkMiddle
		switch {
		case first && last:
			t = chunkFull
		case first:
			t = chunkFirst
		case last:
			t = chunkLast
		}
		w.appendChunk(t, p[:n])
		p, first = p[n:], false
		if last {
			return
		}
	}
}

// startChunk pads the current block if a header no longer fits in it and
// returns the room left in the block for the next chunk, header included.
func (w *Writer) startChunk() int {
	room := BlockSize - w.blockOffset()
	if room < headerSize {
		w.buf = append(w.buf, zeros[:room]...)
		room = BlockSize
	}
	return room
}

var zeros [headerSize]byte

// blockOffset returns the offset within its block of the next byte to be
// appended to w.buf.
func (w *Writer) blockOffset() int {
	return int((w.offset.Load() + int64(len(w.buf))) % BlockSize)
}

// appendChunk appends one chunk of type t with payload p to w.buf.
// REQUIRES: the chunk fits in the current block.
func (w *Writer) appendChunk(t chunkType, p []byte) {
	start := len(w.buf)
	w.buf = append(w.buf, zeros[:headerSize]...)
	w.buf = append(w.buf, p...)
	c := w.buf[start:]
	putHeaderFields(c, len(p), t, w.synced.Load())
	sealChunk(&w.digest, seedFor(t, w.logNum), c)
}

// write hands w.buf to the file in one Write and empties it.
func (w *Writer) write() error {
	w.preallocate(w.offset.Load() + int64(len(w.buf)))
	n, err := w.f.Write(w.buf)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return w.fail(fmt.Errorf("wal: write at offset %d: %w", w.offset.Load(), err))
	}
	w.offset.Add(int64(n))
	if cap(w.buf) > maxRetainedBuffer {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

// preallocate reserves blocks through at least end, a chunk at a time.
// It is only an optimization: a failure turns it off, and the writes then
// allocate (and report a full disk) as they would have.
func (w *Writer) preallocate(end int64) {
	if w.pa == nil || end <= w.prealloc {
		return
	}
	next := max(end, w.prealloc+preallocChunk)
	if err := w.pa.Preallocate(w.prealloc, next-w.prealloc); err != nil {
		w.pa = nil
		return
	}
	w.prealloc = next
}

// syncFile makes the file's data durable, with SyncData when f has it.
func (w *Writer) syncFile() error {
	if ds, ok := w.f.(dataSyncer); ok {
		return ds.SyncData()
	}
	return w.f.Sync()
}

// Sync makes every record written so far durable. Chunks written after a
// successful Sync record the new synced offset, which is what lets a
// reader report damage to these records as corruption rather than a torn
// tail.
//
// A failed Sync is never retried (after a failed fsync the kernel may have
// dropped the dirty data and cleared the error): the Writer keeps
// returning the error from every method.
func (w *Writer) Sync() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.sync()
}

func (w *Writer) sync() error {
	if len(w.buf) > 0 {
		if err := w.write(); err != nil {
			return err
		}
	}
	return w.syncWritten()
}

// SyncWritten makes durable every record already handed to the file:
// those of WriteRecord, and those of BufferRecord once written (not the
// ones still buffered). It is the one method that may run while another
// goroutine calls WriteRecord, BufferRecord or Flush: the commit pipeline
// fsyncs one group's record while the next group is written, and the
// fsync then covers whatever reached the file before it started. At most
// one SyncWritten at a time, and never concurrently with Sync or Close.
// A failure is sticky, as Sync's.
func (w *Writer) SyncWritten() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.syncWritten()
}

// syncWritten syncs the file through every byte written to it.
func (w *Writer) syncWritten() error {
	off := w.offset.Load()
	if off == w.synced.Load() {
		return nil
	}
	if err := w.syncFile(); err != nil {
		return w.fail(fmt.Errorf("wal: sync through offset %d: %w", off, err))
	}
	w.synced.Store(off)
	return nil
}

// fail makes err the Writer's sticky error (keeping an earlier one) and
// returns the sticky error.
func (w *Writer) fail(err error) error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err == nil {
		w.err = err
		w.failed.Store(true)
	}
	return w.err
}

// Close ends the log cleanly: it syncs the records, appends the end-of-log
// trailer (an EOF chunk whose synced offset covers every record, so that a
// reader reports damage anywhere in a closed log as corruption) and syncs
// again. It does not close f. After a failed write or sync Close writes
// nothing and returns that error. Every call after Close returns ErrClosed.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if err := w.stickyErr(); err != nil {
		return err
	}
	if err := w.sync(); err != nil {
		return err
	}
	w.startChunk()
	w.appendChunk(chunkEOF, nil)
	if err := w.write(); err != nil {
		return err
	}
	return w.sync()
}

// Size returns the size of the log file: every byte written so far,
// synced or not. Safe to call from any goroutine.
func (w *Writer) Size() int64 { return w.offset.Load() }

// SyncedOffset returns the offset through which the log is known to be
// durable. Safe to call from any goroutine.
func (w *Writer) SyncedOffset() int64 { return w.synced.Load() }

func (w *Writer) usable() error {
	if w.closed {
		return ErrClosed
	}
	return w.stickyErr()
}

func (w *Writer) stickyErr() error {
	if !w.failed.Load() {
		return nil
	}
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}
