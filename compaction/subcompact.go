package compaction

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/sievedb/sieve/internal/base"
)

// Subcompactions: one compaction's key range cut into disjoint user-key
// ranges that separate goroutines merge and write at the same time, as
// RocksDB's max_subcompactions does. Every version of a user key falls in
// one range, so each range's output is exactly the part of the whole
// compaction's output that lies in it, and the ranges' tables, in range
// order, form a valid sorted, non-overlapping output level.

// SubcompactionBounds returns up to n-1 boundaries that cut the
// compaction's user-key range into at most n parts of about equal input
// bytes, none smaller than minBytes (so a small compaction is not split).
// Range i is [bounds[i-1], bounds[i]) with an open start and end. The
// boundaries are strictly increasing and lie in (Smallest, Largest].
//
// The estimate spreads each input table's bytes evenly over its key range,
// measured in the 8 bytes after the prefix that all the compaction's keys
// share; a boundary is a key made of that prefix and 8 such bytes.
func (c *Compaction) SubcompactionBounds(n int, minBytes uint64) [][]byte {
	total := c.InputBytes()
	if minBytes > 0 && uint64(n) > total/minBytes {
		n = int(total / minBytes)
	}
	if n < 2 || c.IsMove || bytes.Compare(c.Smallest, c.Largest) >= 0 {
		return nil
	}
	prefix := c.Smallest[:base.SharedPrefixLen(c.Smallest, c.Largest)]
	// pos maps a key within [Smallest, Largest] (all of which start with
	// prefix) to a number, monotonically.
	pos := func(k []byte) float64 {
		var w [8]byte
		if len(k) > len(prefix) {
			copy(w[:], k[len(prefix):])
		}
		return float64(binary.BigEndian.Uint64(w[:]))
	}
	type span struct{ lo, hi, bytes float64 }
	var spans []span
	for _, f := range c.InputFiles() {
		spans = append(spans, span{pos(f.Smallest.UserKey), pos(f.Largest.UserKey), float64(f.Size)})
	}
	// below estimates the input bytes at positions < x.
	below := func(x float64) float64 {
		var sum float64
		for _, s := range spans {
			switch {
			case x <= s.lo:
			case x >= s.hi:
				sum += s.bytes
			default:
				sum += s.bytes * (x - s.lo) / (s.hi - s.lo)
			}
		}
		return sum
	}
	lo, hi := pos(c.Smallest), pos(c.Largest)
	var bounds [][]byte
	for i := 1; i < n; i++ {
		want := float64(total) * float64(i) / float64(n)
		a, b := lo, hi
		for iter := 0; iter < 100 && a < b; iter++ {
			m := a + (b-a)/2
			if m == a || m == b {
				break
			}
			if below(m) < want {
				a = m
			} else {
				b = m
			}
		}
		k := boundKey(prefix, b)
		if bytes.Compare(k, c.Smallest) <= 0 || bytes.Compare(k, c.Largest) > 0 ||
			(len(bounds) > 0 && bytes.Compare(k, bounds[len(bounds)-1]) <= 0) {
			continue
		}
		bounds = append(bounds, k)
	}
	return bounds
}

// SubcompactionRange returns range r of bounds (as SubcompactionBounds
// returned them): user keys in [lower, upper), nil meaning open. Ranges run
// from 0 to len(bounds).
func SubcompactionRange(bounds [][]byte, r int) (lower, upper []byte) {
	if r > 0 {
		lower = bounds[r-1]
	}
	if r < len(bounds) {
		upper = bounds[r]
	}
	return lower, upper
}

// boundKey is prefix followed by x as 8 big-endian bytes, trailing zero
// bytes trimmed (the shortest key at that position).
func boundKey(prefix []byte, x float64) []byte {
	var w [8]byte
	if x >= math.MaxUint64 {
		binary.BigEndian.PutUint64(w[:], math.MaxUint64)
	} else {
		binary.BigEndian.PutUint64(w[:], uint64(x))
	}
	end := len(w)
	for end > 0 && w[end-1] == 0 {
		end--
	}
	return append(append([]byte(nil), prefix...), w[:end]...)
}

// NewInputIterRange is NewInputIter limited to user keys in [lower, upper)
// (nil = open): the input of one subcompaction.
func (c *Compaction) NewInputIterRange(open TableOpener, lower, upper []byte) *MergingIter {
	return c.newInputIter(open, IterOptions{LowerBound: lower, UpperBound: upper})
}
