package wal

import (
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
)

// Reader reads the records of one log file in order. See the package
// comment for the call order and FORMAT.md (rules 10-14) for how it tells
// a torn tail from corruption.
type Reader struct {
	r      io.ReaderAt
	size   int64
	logNum uint64
	digest xxhash.Digest

	// buf holds the block starting at file offset blockStart: its first
	// min(BlockSize, size-blockStart) bytes. pos is the block offset of the
	// next chunk.
	buf        []byte
	block      []byte
	blockStart int64
	pos        int

	started    bool  // the file header has been read
	prevSynced int64 // synced offset of the last valid chunk

	rec      []byte // the fragmented record being assembled
	recOpen  bool
	recStart int64

	lastOffset int64
	validEnd   int64
	// at is the offset of the chunk being read (where a failure stops
	// the reader), for Resync.
	at int64

	err  error // sticky: io.EOF, corruption, or an error from r
	tail TailInfo
}

// NewReader returns a Reader for log logNum, stored in the first size
// bytes of r (for a vfs.File, its Size). The reader checks that the file
// header names logNum.
func NewReader(r io.ReaderAt, size int64, logNum uint64) *Reader {
	return &Reader{r: r, size: max(size, 0), logNum: logNum}
}

// Next returns the next record. The slice is valid until the next call to
// Next; the caller must not modify it.
//
// At the end of the records Next returns io.EOF: after the end-of-log
// trailer of a cleanly closed log, at the end of a log whose writer did not
// close it, and at a torn tail (see TornTail and Tail). When the log is
// damaged where it had been synced, Next returns an error wrapping
// base.ErrCorruption that names the offset and the failed check. Errors
// reading the file are returned unmarked. Every error is sticky.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return rec, nil
}

// Offset returns the file offset of the first chunk of the record returned
// last by Next, for error messages about its contents.
func (r *Reader) Offset() int64 { return r.lastOffset }

// ValidEnd returns the file offset just past the last whole record read so
// far (or past the file header, or 0 when the header is missing or torn).
// After Next returns io.EOF this is where the log's good data ends; a
// database that keeps the log truncates it there.
func (r *Reader) ValidEnd() int64 { return r.validEnd }

// TornTail reports whether, after Next returned io.EOF, the file holds
// bytes past ValidEnd other than the end-of-log trailer: the torn,
// never-synced tail of a crashed writer.
func (r *Reader) TornTail() bool { return r.tail.Torn }

// Tail describes how the log ended; meaningful after Next returned io.EOF.
func (r *Reader) Tail() TailInfo { return r.tail }

func (r *Reader) next() ([]byte, error) {
	if !r.started {
		r.started = true
		if err := r.readFileHeader(); err != nil {
			return nil, err
		}
	}
	for {
		h, payload, off, err := r.nextChunk()
		if err != nil {
			return nil, err
		}
		end := off + int64(headerSize+h.length)
		switch h.typ {
		case chunkFull:
			if r.recOpen {
				return nil, r.sequenceError(off, h.typ)
			}
			r.lastOffset, r.validEnd = off, end
			return payload, nil
		case chunkFirst:
			if r.recOpen {
				return nil, r.sequenceError(off, h.typ)
			}
			r.recOpen, r.recStart, r.rec = true, off, r.rec[:0]
			r.appendRec(payload)
		case chunkMiddle, chunkLast:
			if !r.recOpen {
				return nil, corruptionf(off, "%s chunk with no record open", h.typ)
			}
			r.appendRec(payload)
			if h.typ == chunkLast {
				r.recOpen = false
				r.lastOffset, r.validEnd = r.recStart, end
				return r.rec, nil
			}
		case chunkEOF:
			if r.recOpen {
				return nil, r.sequenceError(off, h.typ)
			}
			return nil, r.cleanEnd(end)
		}
	}
}

func (r *Reader) sequenceError(off int64, t chunkType) error {
	return corruptionf(off, "%s chunk inside the record that starts at offset %d", t, r.recStart)
}

// appendRec appends a payload to the record being assembled. Growth is
// bounded by the file size: every byte appended was read from the file.
func (r *Reader) appendRec(p []byte) {
	if need := len(r.rec) + len(p); need > cap(r.rec) {
		n := max(2*cap(r.rec), need, 4096)
		n = int(min(int64(n), max(r.size, int64(need))))
		grown := make([]byte, len(r.rec), n)
		copy(grown, r.rec)
		r.rec = grown
	}
	r.rec = append(r.rec, p...)
}

// nextChunk returns the next valid chunk after skipping block padding. On
// a bad chunk it decides between torn tail and corruption (stop).
func (r *Reader) nextChunk() (h header, payload []byte, off int64, err error) {
	for {
		off = r.blockStart + int64(r.pos)
		r.at = off
		if off >= r.size {
			return h, nil, off, r.endOfFile()
		}
		if r.pos == BlockSize {
			if err := r.loadBlock(off); err != nil {
				return h, nil, off, err
			}
			continue
		}
		if BlockSize-r.pos < headerSize {
			if i := firstNonZero(r.block[r.pos:]); i >= 0 {
				return h, nil, off, r.stop(off+int64(i), "non-zero byte in block padding")
			}
			r.pos = BlockSize
			continue
		}
		c, h, reason := r.checkChunk(r.block[r.pos:], off, r.logNum)
		if reason != "" {
			return h, nil, off, r.stop(off, reason)
		}
		if err := r.checkSynced(h, off); err != nil {
			return h, nil, off, err
		}
		r.pos += len(c)
		return h, c[headerSize:], off, nil
	}
}

// checkChunk checks the chunk at the start of b (the rest of its block
// present in the file), at file offset off, against checksum seed seed. It
// returns the chunk, its header, and which check failed, if one did.
func (r *Reader) checkChunk(b []byte, off int64, seed uint64) (chunk []byte, h header, failed string) {
	if len(b) < headerSize {
		return nil, h, "truncated chunk header"
	}
	if isZero(b[:headerSize]) {
		return nil, h, "zeroed chunk header"
	}
	h = decodeHeader(b)
	n := headerSize + h.length
	switch {
	case int(off%BlockSize)+n > BlockSize:
		return nil, h, fmt.Sprintf("chunk length %d crosses the block boundary", h.length)
	case n > len(b):
		return nil, h, "truncated chunk payload"
	}
	chunk = b[:n]
	if h.checksum != chunkChecksum(&r.digest, seed, chunk) {
		return nil, h, "chunk checksum mismatch"
	}
	return chunk, h, ""
}

// checkSynced checks what only a corrupt writer or corrupt-yet-valid
// bytes could get wrong in a chunk whose checksum holds (FORMAT.md rule
// 12).
func (r *Reader) checkSynced(h header, off int64) error {
	switch {
	case !h.typ.isBodyType():
		return corruptionf(off, "unexpected chunk type %s with a valid checksum", h.typ)
	case h.synced > off:
		return corruptionf(off, "chunk claims the log was synced through offset %d, past the chunk itself", h.synced)
	case h.synced < r.prevSynced:
		return corruptionf(off, "chunk's synced offset %d is below the previous chunk's %d", h.synced, r.prevSynced)
	}
	r.prevSynced = h.synced
	return nil
}

// endOfFile is reached when the file ends at a chunk boundary.
func (r *Reader) endOfFile() error {
	switch {
	case r.recOpen:
		return r.stop(r.size, fmt.Sprintf("file ends inside the record that starts at offset %d", r.recStart))
	case r.size > r.validEnd:
		return r.stop(r.size, "file ends in block padding")
	}
	return r.stop(r.size, "")
}

// cleanEnd handles the end-of-log trailer, whose chunk ends at end.
func (r *Reader) cleanEnd(end int64) error {
	if end != r.size {
		return corruptionf(end, "%d bytes after the end-of-log trailer", r.size-end)
	}
	r.tail = TailInfo{ValidEnd: r.validEnd, Size: r.size, Clean: true, BadOffset: r.size}
	return io.EOF
}

// loadBlock reads the block that starts at file offset start.
func (r *Reader) loadBlock(start int64) error {
	if r.buf == nil {
		r.buf = make([]byte, BlockSize)
	}
	n := int(min(BlockSize, r.size-start))
	got, err := r.r.ReadAt(r.buf[:n], start)
	if got == n {
		err = nil
	} else if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("wal: read %d bytes at offset %d of a %d-byte log: %w", n, start, r.size, err)
	}
	r.block, r.blockStart, r.pos = r.buf[:n], start, 0
	return nil
}

func corruptionf(off int64, format string, args ...any) error {
	return base.MarkCorruption(&DamageError{Offset: off, Detail: fmt.Sprintf(format, args...)})
}

// DamageError is the error (wrapped so that it matches base.ErrCorruption)
// for damage found in synced bytes of a log: Offset is the first bad byte,
// Detail the failed check. Find it with errors.As.
type DamageError struct {
	Offset int64
	Detail string
}

func (e *DamageError) Error() string { return fmt.Sprintf("wal: offset %d: %s", e.Offset, e.Detail) }

func isZero(b []byte) bool { return firstNonZero(b) < 0 }

func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}
