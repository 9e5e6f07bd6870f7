package filter

import (
	"encoding/binary"
	"strconv"
)

// The cuckoo table filter (FormatCuckoo, see FORMAT.md and cuckoo_bucket.go).

const cuckooTrailerLen = 22 // keys u64, entries u64, buckets u32, f u8, format u8

// Cuckoo returns the cuckoo-filter policy with fingerprintBits-bit
// fingerprints, clamped to [4, 16]. Tables are sized for 95% load; a table
// whose keys cannot all be placed within 2000 kicks each is rebuilt with 1%
// more buckets, so a build never fails and never drops a key. Its Name is
// "sieve.cuckoo/<fingerprintBits>". The false-positive rate is at most
// 2·4/2^f (0.195% at f = 12).
//
// Keys whose fingerprint already sits in one of their buckets are not stored
// again: they test positive already, and a table filter never deletes.
func Cuckoo(fingerprintBits int) Policy {
	f := min(maxFingerprintBits, max(minFingerprintBits, fingerprintBits))
	return &cuckooPolicy{policyBase: policyBase{"sieve.cuckoo/" + strconv.Itoa(f), FormatCuckoo}, f: f}
}

type cuckooPolicy struct {
	policyBase
	f int
}

func (p *cuckooPolicy) NewBuilder() Builder { return &cuckooBuilder{p: p} }

type cuckooBuilder struct {
	hashCollector
	p *cuckooPolicy
}

// Finish returns the block and resets the builder.
func (b *cuckooBuilder) Finish() []byte {
	hs := b.take()
	var n uint32
	if hs.len() > 0 {
		n = cuckooBuckets(uint64(hs.len()), cuckooTargetLoad)
	}
	return buildCuckoo(hs, b.p.f, n)
}

// buildCuckoo builds the block of hs with n buckets, or with 1% more each
// time some key cannot be placed, until every key is.
func buildCuckoo(hs hashList, f int, n uint32) []byte {
	l := newCuckooLayout(f)
	if hs.len() > 0 {
		n = max(n, 1)
	}
	for {
		out, entries, ok := tryBuildCuckoo(hs, &l, n)
		if ok {
			t := out[uint64(n)*l.stride:]
			binary.LittleEndian.PutUint64(t[0:], uint64(hs.len()))
			binary.LittleEndian.PutUint64(t[8:], entries)
			binary.LittleEndian.PutUint32(t[16:], n)
			t[20] = byte(l.f)
			t[21] = byte(FormatCuckoo)
			return out
		}
		n += n/100 + 1
	}
}

// tryBuildCuckoo inserts every hash into n buckets and returns the block
// with its trailer bytes still zero, the number of fingerprints stored, and
// false if some key could not be placed.
func tryBuildCuckoo(hs hashList, l *cuckooLayout, n uint32) ([]byte, uint64, bool) {
	out := make([]byte, uint64(n)*l.stride+cuckooTrailerLen)
	rng := kickRand(n)
	var entries uint64
	for _, ch := range hs.chunks {
		for _, h := range ch {
			stored, ok := insertTableKey(out, l, n, h, &rng)
			if !ok {
				return nil, 0, false
			}
			if stored {
				entries++
			}
		}
	}
	return out, entries, true
}

// insertTableKey adds the key of hash h to a table under construction. It
// reports whether a fingerprint was stored (false when the key's fingerprint
// was there already), and false in ok when the key could not be placed.
func insertTableKey(out []byte, l *cuckooLayout, n uint32, h uint64, rng *kickRand) (stored, ok bool) {
	fp := l.fingerprint(h)
	i1 := homeBucket(h, n)
	i2 := altBucket(i1, fp, n)
	w1, w2 := l.load(out, i1), l.load(out, i2)
	if l.has(w1, fp) || l.has(w2, fp) {
		return false, true
	}
	if w, ok := l.put(w1, fp); ok {
		l.store(out, i1, w)
	} else if w, ok := l.put(w2, fp); ok {
		l.store(out, i2, w)
	} else if !kickIn(out, l, n, i1, i2, fp, rng) {
		return false, false
	}
	return true, true
}

// kickIn places fp, whose buckets i1 and i2 are both full, by the random
// walk of the paper: evict a random slot's fingerprint, move it to its
// other bucket, repeat. It reports false after maxKicks evictions, leaving
// one fingerprint homeless (the caller rebuilds).
func kickIn(out []byte, l *cuckooLayout, n, i1, i2 uint32, fp uint64, rng *kickRand) bool {
	i := i1
	if rng.next()&1 == 1 {
		i = i2
	}
	for range maxKicks {
		j := uint(rng.next() % bucketSlots)
		w := l.load(out, i)
		victim := l.slot(w, j)
		l.store(out, i, l.setSlot(w, j, fp))
		fp = victim
		i = altBucket(i, fp, n)
		if w, ok := l.put(l.load(out, i), fp); ok {
			l.store(out, i, w)
			return true
		}
	}
	return false
}

// cuckooReader probes a FormatCuckoo block in place.
type cuckooReader struct {
	data []byte // the whole block; the trailer pads the last bucket's 8-byte load
	n    uint32
	l    cuckooLayout
}

func openCuckoo(data []byte) (Reader, error) {
	t, err := blockTrailer(data, cuckooTrailerLen, "cuckoo")
	if err != nil {
		return nil, err
	}
	entries := binary.LittleEndian.Uint64(t[8:])
	n := binary.LittleEndian.Uint32(t[16:])
	f := int(t[20])
	if f < minFingerprintBits || f > maxFingerprintBits {
		return nil, malformed("cuckoo block has %d-bit fingerprints, want %d..%d", f, minFingerprintBits, maxFingerprintBits)
	}
	l := newCuckooLayout(f)
	switch body := uint64(len(data) - cuckooTrailerLen); {
	case body != uint64(n)*l.stride:
		return nil, malformed("cuckoo block has %d body bytes for %d buckets of %d bytes", body, n, l.stride)
	case entries > uint64(n)*bucketSlots:
		return nil, malformed("cuckoo block claims %d entries in %d buckets", entries, n)
	case n == 0:
		return emptyFilter{}, nil
	}
	return &cuckooReader{data: data, n: n, l: l}, nil
}

// MayContain loads both buckets and tests them together, without a branch
// between them, so that their two cache misses overlap.
func (r *cuckooReader) MayContain(key []byte) bool { return r.MayContainHash(hashKey(key)) }

// MayContainHash implements HashReader.
func (r *cuckooReader) MayContainHash(h uint64) bool {
	fp := r.l.fingerprint(h)
	i1 := homeBucket(h, r.n)
	i2 := altBucket(i1, fp, r.n)
	return r.l.matches(r.l.load(r.data, i1), fp)|r.l.matches(r.l.load(r.data, i2), fp) != 0
}
