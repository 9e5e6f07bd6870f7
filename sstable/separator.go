package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/sievedb/sieve/internal/base"
)

// shortSeparator returns a user key u with a < u < b that is shorter than a,
// appended to dst, and ok=false when it finds none. REQUIRES: a < b.
//
// Where a and b first differ (index n), a[n] < b[n]. If a[n]+1 < b[n], or
// a[n]+1 == b[n] and b goes on after n, a[:n]+(a[n]+1) is between them
// (in the second case it is a proper prefix of b). Otherwise any key
// a[:i]+(a[i]+1) with i > n and a[i] < 0xff is: larger than a at i, and
// still below b at n.
func shortSeparator(dst, a, b []byte) ([]byte, bool) {
	n := base.SharedPrefixLen(a, b)
	if n >= len(a) || n >= len(b) {
		return dst, false // a is a prefix of b: nothing shorter than a lies between
	}
	i := n
	// a[:n]+(a[n]+1) is below b unless it equals b: when a[n]+1 == b[n] it
	// must be a proper prefix of b.
	if a[n]+1 == b[n] && n+1 == len(b) {
		for i = n + 1; i < len(a) && a[i] == 0xff; i++ {
		}
	}
	if i+1 >= len(a) {
		return dst, false // the result would not be shorter than a
	}
	dst = append(dst, a[:i+1]...)
	dst[len(dst)-1]++
	return dst, true
}

// shortSuccessor returns a user key u > a shorter than a, appended to dst,
// and ok=false when it finds none (a is empty or all 0xff bytes but the last).
func shortSuccessor(dst, a []byte) ([]byte, bool) {
	for i := 0; i+1 < len(a); i++ {
		if a[i] != 0xff {
			dst = append(dst, a[:i+1]...)
			dst[len(dst)-1]++
			return dst, true
		}
	}
	return dst, false
}

// indexSeparator appends to dst the encoded index key for a block whose last
// key is last, followed by a block starting with next. The result S obeys
// last <= S < next in internal-key order (FORMAT.md, item 5).
func indexSeparator(dst []byte, last, next base.InternalKey) []byte {
	if !bytes.Equal(last.UserKey, next.UserKey) {
		if out, ok := shortSeparator(dst, last.UserKey, next.UserKey); ok {
			return binary.LittleEndian.AppendUint64(out, separatorTrailer)
		}
	}
	return last.AppendEncoded(dst)
}

// indexSuccessor appends to dst the index key for the last block: S >= last.
func indexSuccessor(dst []byte, last base.InternalKey) []byte {
	if out, ok := shortSuccessor(dst, last.UserKey); ok {
		return binary.LittleEndian.AppendUint64(out, separatorTrailer)
	}
	return last.AppendEncoded(dst)
}
