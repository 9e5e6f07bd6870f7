package wal

import (
	"io"
)

// Resync moves a Reader past damage, for recovery modes that drop damaged
// records instead of failing (sieve's WALRecoverySkipDamaged). Call it
// after Next returned an error wrapping base.ErrCorruption, or io.EOF at a
// torn tail. It looks, at every byte offset after the chunk where reading
// stopped, for the next chunk of this log (checksum seeded with its log
// number) that begins a record or ends the log (FULL, FIRST or EOF), and
// resumes reading there. The record being assembled when the damage was
// found is dropped.
//
// It returns the damaged range [from, to) that reading skips, and ok false
// when no such chunk follows (to is then the file size, and Next returns
// io.EOF with a torn tail). A chunk found this way may be a stale copy of
// an earlier chunk of the same log (a misplaced block): its records pass
// their checksums, and the caller checks what they hold (sieve refuses a
// batch whose sequence number does not grow).
func (r *Reader) Resync() (from, to int64, ok bool, err error) {
	from = r.at
	if r.recOpen {
		from = r.recStart
	}
	start := r.at + 1
	for bs := start - start%BlockSize; bs < r.size; bs += BlockSize {
		if err := r.loadBlock(bs); err != nil {
			return from, bs, false, err
		}
		for i := int(max(start-bs, 0)); i+headerSize <= len(r.block); i++ {
			t := chunkType(r.block[i+offType])
			if t != chunkFull && t != chunkFirst && t != chunkEOF {
				continue
			}
			_, h, failed := r.checkChunk(r.block[i:], bs+int64(i), r.logNum)
			if failed != "" {
				continue
			}
			r.pos, r.recOpen, r.rec, r.err = i, false, r.rec[:0], nil
			r.prevSynced, r.tail, r.started = h.synced, TailInfo{}, true
			return from, bs + int64(i), true, nil
		}
	}
	r.recOpen, r.err = false, io.EOF
	r.tail = TailInfo{ValidEnd: r.validEnd, Size: r.size, Torn: true, BadOffset: from, Reason: "damaged records skipped"}
	return from, r.size, false, nil
}
