package sstable

import (
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
)

// blockWriter builds the contents of one block (see FORMAT.md "Block
// contents"). Call order: (add* finish reset)*. Keys must be added in
// increasing order; the writer does not check it (Writer.Add does).
type blockWriter struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	counter         int // entries since the last restart point
	nEntries        int
	lastKey         []byte
}

func (b *blockWriter) add(key, value []byte) {
	shared := 0
	if b.counter < b.restartInterval && b.nEntries > 0 {
		shared = base.SharedPrefixLen(b.lastKey, key)
	} else {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.counter++
	b.nEntries++
}

// estimatedSize is the size finish would return now.
func (b *blockWriter) estimatedSize() int { return len(b.buf) + 4*len(b.restarts) + 4 }

func (b *blockWriter) empty() bool { return b.nEntries == 0 }

// finish appends the restart array and returns the block contents, valid
// until reset.
func (b *blockWriter) finish() []byte {
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}

func (b *blockWriter) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.counter = 0
	b.nEntries = 0
	b.lastKey = b.lastKey[:0]
}
