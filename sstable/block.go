package sstable

import (
	"encoding/binary"
	"fmt"

	"github.com/sievedb/sieve/internal/base"
)

// block is the contents of a decompressed block whose restart array has been
// checked (see FORMAT.md "Block contents"). Entries are checked as they are
// decoded.
type block struct {
	data        []byte
	restartsOff int // offset of restart[0]; entries live in data[:restartsOff]
	numRestarts int
}

// parseBlock checks the restart array of data. It costs O(restarts).
func parseBlock(data []byte) (block, error) {
	if len(data) < 4 {
		return block{}, fmt.Errorf("block of %d bytes cannot hold a restart count", len(data))
	}
	n := uint64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if n*4+4 > uint64(len(data)) {
		return block{}, fmt.Errorf("restart count %d does not fit a %d-byte block", n, len(data))
	}
	b := block{data: data, restartsOff: len(data) - 4 - int(n)*4, numRestarts: int(n)}
	if n == 0 && b.restartsOff != 0 {
		return block{}, fmt.Errorf("block without restart points holds %d bytes of entries", b.restartsOff)
	}
	prev := -1
	for i := 0; i < b.numRestarts; i++ {
		r := b.restart(i)
		if (i == 0 && r != 0) || r <= prev || r >= b.restartsOff {
			return block{}, fmt.Errorf("restart point %d at offset %d is out of place (previous %d, entries end at %d)",
				i, r, prev, b.restartsOff)
		}
		prev = r
	}
	return b, nil
}

func (b *block) restart(i int) int {
	return int(binary.LittleEndian.Uint32(b.data[b.restartsOff+4*i:]))
}

// entry is one decoded entry header: key = prevKey[:shared] + delta.
type entry struct {
	shared int
	delta  []byte
	value  []byte
	next   int // offset of the following entry
}

// uvarintAt decodes a varint from data[off:end], returning the value and the
// offset after it; ok is false if it runs past end or is malformed.
func uvarintAt(data []byte, off, end int) (uint64, int, bool) {
	if off < end && data[off] < 0x80 {
		return uint64(data[off]), off + 1, true
	}
	v, n := binary.Uvarint(data[off:end])
	if n <= 0 {
		return 0, 0, false
	}
	return v, off + n, true
}

// decodeEntry decodes the entry at off, whose predecessor's key has length
// prevLen. Every length is checked against the entries region.
func (b *block) decodeEntry(off, prevLen int) (entry, error) {
	shared, p, k, v, err := b.entryAt(off, prevLen)
	if err != nil {
		return entry{}, err
	}
	return entry{shared: shared, delta: b.data[p:k:k], value: b.data[k:v:v], next: v}, nil
}

// entryAt is decodeEntry returning offsets: the key delta is data[p:k],
// the value data[k:next]. Its results fit in registers (an entry and an
// error do not), so the hot paths (blockIter.step, restartKey) read them
// without a round trip through memory, whose wide reloads of narrow
// stores stall the CPU's store forwarding on every entry.
func (b *block) entryAt(off, prevLen int) (shared, p, k, next int, err error) {
	end := b.restartsOff
	if off < 0 || off >= end {
		return 0, 0, 0, 0, fmt.Errorf("entry offset %d outside entries [0,%d)", off, end)
	}
	var sh, unshared, vlen uint64
	if h := b.data[off:min(off+3, end)]; len(h) == 3 && h[0]|h[1]|h[2] < 0x80 {
		// Fast path: all three lengths fit one byte each (most entries).
		sh, unshared, vlen, p = uint64(h[0]), uint64(h[1]), uint64(h[2]), off+3
	} else {
		var ok1, ok2, ok3 bool
		sh, p, ok1 = uvarintAt(b.data, off, end)
		if ok1 {
			unshared, p, ok2 = uvarintAt(b.data, p, end)
		}
		if ok2 {
			vlen, p, ok3 = uvarintAt(b.data, p, end)
		}
		if !ok3 {
			return 0, 0, 0, 0, fmt.Errorf("entry at offset %d: malformed header", off)
		}
	}
	if sh > uint64(prevLen) {
		return 0, 0, 0, 0, fmt.Errorf("entry at offset %d shares %d bytes of a %d-byte key", off, sh, prevLen)
	}
	rest := uint64(end - p)
	if unshared > rest || vlen > rest-unshared {
		return 0, 0, 0, 0, fmt.Errorf("entry at offset %d: key %d + value %d bytes overrun the entries (%d left)",
			off, unshared, vlen, rest)
	}
	k = p + int(unshared)
	return int(sh), p, k, k + int(vlen), nil
}

// validInternalKey is checkInternalKey's verdict, inlined on the hot paths
// (the error is built only for a key that fails).
func validInternalKey(key []byte) bool {
	n := len(key)
	return n >= base.TrailerLen && base.Kind(key[n-base.TrailerLen]).Valid()
}

// checkInternalKey reports whether key is a well-formed encoded internal key.
func checkInternalKey(key []byte) error {
	if len(key) < base.TrailerLen {
		return fmt.Errorf("key %q shorter than a trailer", key)
	}
	if !base.Kind(key[len(key)-base.TrailerLen]).Valid() {
		return fmt.Errorf("key %q has unknown kind %d", key[:len(key)-base.TrailerLen], key[len(key)-base.TrailerLen])
	}
	return nil
}

// restartKey returns the key stored at restart point i, aliasing the block.
func (b *block) restartKey(i int, internal bool) ([]byte, error) {
	off := b.restart(i)
	_, p, k, _, err := b.entryAt(off, 0)
	if err != nil {
		return nil, err
	}
	key := b.data[p:k:k]
	if internal && !validInternalKey(key) {
		return nil, fmt.Errorf("restart point %d: %w", i, checkInternalKey(key))
	}
	return key, nil
}
