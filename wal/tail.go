package wal

import (
	"encoding/binary"
	"fmt"
	"io"
)

// TailInfo describes how a log ended, for recovery decisions and logs.
type TailInfo struct {
	// ValidEnd is the offset just past the last whole record (or past the
	// file header, or 0 when the header is missing or torn).
	ValidEnd int64
	// Size is the file size the Reader was given.
	Size int64
	// Clean is set when the log ends with the end-of-log trailer that
	// Writer.Close writes.
	Clean bool
	// Torn is set when bytes past ValidEnd are not the trailer: the
	// unsynced tail of a crashed writer, to be truncated.
	Torn bool
	// BadOffset is the first bad byte, or Size when the file simply ends.
	BadOffset int64
	// Reason names the check that failed at BadOffset (Torn only).
	Reason string
}

// String describes how the log ends.
func (t TailInfo) String() string {
	switch {
	case t.Clean:
		return fmt.Sprintf("clean end: records end at offset %d, end-of-log trailer follows", t.ValidEnd)
	case t.Torn:
		return fmt.Sprintf("torn tail: records end at offset %d, %d bytes follow; at offset %d: %s; no later chunk claims it was synced",
			t.ValidEnd, t.Size-t.ValidEnd, t.BadOffset, t.Reason)
	}
	return fmt.Sprintf("records end at offset %d, the end of the file, with no end-of-log trailer (log not closed)", t.ValidEnd)
}

// stop is called at the first bad byte x (FORMAT.md rule 10): it searches
// the file after x for a chunk proving x had been synced (rule 11) and
// returns corruption if it finds one, io.EOF with a torn tail otherwise.
// reason names the failed check; it is empty when the file simply ends.
func (r *Reader) stop(x int64, reason string) error {
	c, found, err := r.findSyncClaim(x)
	if err != nil {
		return err
	}
	if found {
		return corruptionf(x, "%s, but the %s chunk at offset %d was written after the log had been synced through offset %d",
			reason, c.typ, c.off, c.synced)
	}
	r.tail = TailInfo{
		ValidEnd:  r.validEnd,
		Size:      r.size,
		Torn:      r.size > r.validEnd,
		BadOffset: x,
		Reason:    reason,
	}
	return io.EOF
}

// syncClaim is a valid chunk whose synced offset lies past a bad byte.
type syncClaim struct {
	off, synced int64
	typ         chunkType
}

// findSyncClaim looks, at every offset after x where a chunk header could
// begin, for a chunk of this log with x < synced offset <= its own offset.
// The cheap tests (type, synced offset, length) come before the checksum,
// so garbage and unsynced chunks cost a few comparisons per byte.
func (r *Reader) findSyncClaim(x int64) (syncClaim, bool, error) {
	from := x + 1
	for start := from - from%BlockSize; start < r.size; start += BlockSize {
		if err := r.loadBlock(start); err != nil {
			return syncClaim{}, false, err
		}
		i := int(max(from-start, 0))
		if c, ok := r.scanBlock(i, x); ok {
			return c, true, nil
		}
	}
	return syncClaim{}, false, nil
}

// scanBlock runs findSyncClaim's search over the loaded block from block
// offset i.
func (r *Reader) scanBlock(i int, x int64) (syncClaim, bool) {
	b := r.block
	for ; i+headerSize <= len(b); i++ {
		t := chunkType(b[i+offType])
		if !t.isBodyType() {
			continue
		}
		off := r.blockStart + int64(i)
		s := int64(binary.LittleEndian.Uint64(b[i+offSynced:]))
		if s <= x || s > off {
			continue
		}
		n := headerSize + int(binary.LittleEndian.Uint16(b[i+offLength:]))
		if i+n > len(b) {
			continue
		}
		c := b[i : i+n]
		if binary.LittleEndian.Uint64(c) == chunkChecksum(&r.digest, r.logNum, c) {
			return syncClaim{off: off, synced: s, typ: t}, true
		}
	}
	return syncClaim{}, false
}
