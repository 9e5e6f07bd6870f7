package sstable

import (
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
)

// blockIter walks the entries of one block in both directions.
//
// Forward steps decode the next entry onto the current key. Backward steps
// cannot (prefix compression only runs forward), so Prev, Last and SeekLT
// decode a whole restart interval at once into a small cache (rcache) and
// then step back through it; a Prev inside a cached interval costs one key
// copy.
//
// Positions: off == -1 is before the first entry; off == restartsOff is past
// the last. Errors are sticky: once err is set every positioning call
// returns false. blockIter is not safe for concurrent use.
type blockIter struct {
	blk      block
	internal bool   // keys are encoded internal keys (data and index blocks)
	ctx      errCtx // names the block in errors

	off, nextOff int
	key          []byte // current key; always aliases keyBuf
	val          []byte // current value; aliases the block
	keyBuf       []byte

	rcache []rcEntry
	rcBuf  []byte
	rcIdx  int // index of the current entry in rcache, or -1

	err error
}

type rcEntry struct {
	off, next        int
	keyStart, keyEnd int // in rcBuf
	val              []byte
}

// reset drops everything but the iterator's reusable buffers (kept only
// while small, so that one huge key does not stay pinned).
func (i *blockIter) reset() {
	clear(i.rcache[:cap(i.rcache)]) // drop references to old blocks
	keyBuf, rcache, rcBuf := i.keyBuf[:0], i.rcache[:0], i.rcBuf[:0]
	if cap(keyBuf) > 4<<10 {
		keyBuf = nil
	}
	if cap(rcBuf) > 64<<10 {
		rcBuf, rcache = nil, nil
	}
	*i = blockIter{keyBuf: keyBuf, rcache: rcache, rcBuf: rcBuf}
}

// init points the iterator at blk, keeping its buffers.
func (i *blockIter) init(blk block, internal bool, ctx errCtx) {
	i.blk = blk
	i.internal = internal
	i.ctx = ctx
	i.off, i.nextOff = -1, 0
	i.key, i.val = nil, nil
	i.rcIdx = -1
	i.err = nil
}

func (i *blockIter) valid() bool { return i.off >= 0 && i.off < i.blk.restartsOff && i.err == nil }

func (i *blockIter) fail(err error) bool {
	i.err = i.ctx.corrupt(err)
	i.off, i.nextOff = i.blk.restartsOff, i.blk.restartsOff
	i.key, i.val = nil, nil
	i.rcIdx = -1
	return false
}

func (i *blockIter) exhaustForward() bool {
	i.off, i.nextOff = i.blk.restartsOff, i.blk.restartsOff
	i.key, i.val = nil, nil
	i.rcIdx = -1
	return false
}

func (i *blockIter) exhaustBackward() bool {
	i.off, i.nextOff = -1, 0
	i.key, i.val = nil, nil
	i.rcIdx = -1
	return false
}

// ikey returns the current key as an InternalKey (internal blocks only).
func (i *blockIter) ikey() base.InternalKey {
	n := len(i.key) - base.TrailerLen
	return base.InternalKey{UserKey: i.key[:n:n], Trailer: binary.LittleEndian.Uint64(i.key[n:])}
}

// step decodes the entry at off onto the current key.
func (i *blockIter) step(off int, atRestart bool) bool {
	prevLen := len(i.key)
	if atRestart {
		prevLen = 0
	}
	shared, p, k, next, err := i.blk.entryAt(off, prevLen)
	if err != nil {
		return i.fail(err)
	}
	d := i.blk.data
	i.keyBuf = append(i.keyBuf[:shared], d[p:k]...)
	i.key = i.keyBuf
	if i.internal && !validInternalKey(i.key) {
		return i.fail(checkInternalKey(i.key))
	}
	i.off, i.nextOff, i.val = off, next, d[k:next:next]
	return true
}

func (i *blockIter) first() bool {
	if i.err != nil {
		return false
	}
	i.rcIdx = -1
	if i.blk.numRestarts == 0 {
		return i.exhaustForward()
	}
	return i.step(0, true)
}

func (i *blockIter) next() bool {
	if i.err != nil {
		return false
	}
	i.rcIdx = -1
	if i.off < 0 {
		return i.first()
	}
	if i.nextOff >= i.blk.restartsOff {
		return i.exhaustForward()
	}
	return i.step(i.nextOff, false)
}

func (i *blockIter) last() bool {
	if i.err != nil {
		return false
	}
	if i.blk.numRestarts == 0 {
		return i.exhaustBackward()
	}
	return i.fillCache(i.blk.restart(i.blk.numRestarts-1), i.blk.restartsOff, nil, 0)
}

func (i *blockIter) prev() bool {
	if i.err != nil || i.off < 0 {
		return false
	}
	if i.rcIdx > 0 {
		i.applyCache(i.rcIdx - 1)
		return true
	}
	// Find the restart interval holding the entry before i.off.
	target := min(i.off, i.blk.restartsOff)
	lo, hi := 0, i.blk.numRestarts // first restart >= target is in [lo, hi]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if i.blk.restart(m) < target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return i.exhaustBackward()
	}
	return i.fillCache(i.blk.restart(lo-1), target, nil, 0)
}

// searchRestarts returns the smallest j with restartKey(j) >= (ukey, trailer),
// or numRestarts if there is none.
func (i *blockIter) searchRestarts(ukey []byte, trailer uint64) (int, bool) {
	lo, hi := 0, i.blk.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k, err := i.blk.restartKey(m, true)
		if err != nil {
			return 0, i.fail(err)
		}
		if compareKey(k, ukey, trailer) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, true
}

// seekGE moves to the first entry >= (ukey, trailer).
func (i *blockIter) seekGE(ukey []byte, trailer uint64) bool {
	if i.err != nil {
		return false
	}
	i.rcIdx = -1
	j, ok := i.searchRestarts(ukey, trailer)
	if !ok {
		return false
	}
	if j > 0 {
		j-- // entries of interval j-1 are below restart j's key but may be >= target
	} else if i.blk.numRestarts == 0 {
		return i.exhaustForward()
	}
	if !i.step(i.blk.restart(j), true) {
		return false
	}
	for compareKey(i.key, ukey, trailer) < 0 {
		if !i.next() {
			return false
		}
	}
	return true
}

// seekLT moves to the last entry < (ukey, trailer).
func (i *blockIter) seekLT(ukey []byte, trailer uint64) bool {
	if i.err != nil {
		return false
	}
	j, ok := i.searchRestarts(ukey, trailer)
	if !ok {
		return false
	}
	if j == 0 {
		return i.exhaustBackward()
	}
	stop := i.blk.restartsOff
	if j < i.blk.numRestarts {
		stop = i.blk.restart(j)
	}
	return i.fillCache(i.blk.restart(j-1), stop, ukey, trailer)
}

// fillCache decodes the entries from the restart point at start up to stop
// (exclusive), or up to the first key >= (limitKey, limitTrailer) when
// limitKey is non-nil, into rcache and positions on the last of them.
func (i *blockIter) fillCache(start, stop int, limitKey []byte, limitTrailer uint64) bool {
	i.rcache = i.rcache[:0]
	i.rcBuf = i.rcBuf[:0]
	prevStart, prevLen := 0, 0
	for off := start; off < stop; {
		e, err := i.blk.decodeEntry(off, prevLen)
		if err != nil {
			return i.fail(err)
		}
		keyStart := len(i.rcBuf)
		i.rcBuf = append(i.rcBuf, i.rcBuf[prevStart:prevStart+e.shared]...)
		i.rcBuf = append(i.rcBuf, e.delta...)
		key := i.rcBuf[keyStart:]
		if i.internal {
			if err := checkInternalKey(key); err != nil {
				return i.fail(err)
			}
		}
		if limitKey != nil && compareKey(key, limitKey, limitTrailer) >= 0 {
			i.rcBuf = i.rcBuf[:keyStart]
			break
		}
		i.rcache = append(i.rcache, rcEntry{off: off, next: e.next, keyStart: keyStart, keyEnd: len(i.rcBuf), val: e.value})
		prevStart, prevLen = keyStart, len(key)
		off = e.next
	}
	if len(i.rcache) == 0 {
		return i.exhaustBackward()
	}
	i.applyCache(len(i.rcache) - 1)
	return true
}

func (i *blockIter) applyCache(idx int) {
	e := &i.rcache[idx]
	i.rcIdx = idx
	i.off, i.nextOff, i.val = e.off, e.next, e.val
	i.keyBuf = append(i.keyBuf[:0], i.rcBuf[e.keyStart:e.keyEnd]...)
	i.key = i.keyBuf
}
