package manifest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// KeyWords is a user key's first 16 bytes as two big-endian words, padded
// with zero bytes: comparing two keys' words orders them as bytes.Compare
// does whenever the words differ (a key shorter than the other's first 16
// bytes pads with zeros, which sort below every byte it could be compared
// with, and a key that is a prefix of another sorts first). Equal words
// decide nothing: the keys share their first 16 bytes (or one is the
// other padded with zeros) and the bytes must be compared.
type KeyWords struct{ Hi, Lo uint64 }

// MakeKeyWords returns the words of key.
func MakeKeyWords(key []byte) KeyWords {
	var b [16]byte
	copy(b[:], key)
	return KeyWords{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// cmp is -1, 0 or +1 as a's words sort before, with or after b's; 0
// leaves the order of the keys undecided.
func (a KeyWords) cmp(b KeyWords) int {
	switch {
	case a.Hi < b.Hi:
		return -1
	case a.Hi > b.Hi:
		return 1
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// LevelSearch finds the table of a sorted level (L1..L6) that may hold a
// user key from the words of the tables' bounds, kept in one array a level
// in the level's order: a point lookup's binary search then reads
// consecutive words instead of following each probed table's pointer to
// its metadata and from there to its key. It belongs to one Version (its
// levels never change) and is built at the version's first lookup.
type LevelSearch struct {
	levels [NumLevels]levelWords
}

// levelWords holds, for the tables of one level in order, the words of
// their smallest and largest user keys.
type levelWords struct {
	smallest, largest []KeyWords
}

func newLevelSearch(lv *Levels) *LevelSearch {
	s := new(LevelSearch)
	for level := 1; level < NumLevels; level++ {
		files := lv[level]
		if len(files) == 0 {
			continue
		}
		w := make([]KeyWords, 2*len(files))
		lw := levelWords{smallest: w[:len(files):len(files)], largest: w[len(files):]}
		for i, f := range files {
			lw.smallest[i] = MakeKeyWords(f.Smallest.UserKey)
			lw.largest[i] = MakeKeyWords(f.Largest.UserKey)
		}
		s.levels[level] = lw
	}
	return s
}

// LevelSearch returns the search index of column family cf's sorted
// levels, or nil for a family the version does not have (Find then
// searches the tables themselves). The first call builds the indexes of
// every family: a version's levels never change once it is in use, so two
// callers racing to build them build the same, and either may be kept.
func (v *Version) LevelSearch(cf uint32) *LevelSearch {
	m := v.search.Load()
	if m == nil {
		built := make(map[uint32]*LevelSearch, len(v.CFs))
		for id, lv := range v.CFs {
			built[id] = newLevelSearch(lv)
		}
		v.search.CompareAndSwap(nil, &built)
		m = v.search.Load()
	}
	return (*m)[cf]
}

// Find returns the index in files (level's tables, sorted, of the version
// s belongs to; level >= 1) of the table whose user-key range holds key,
// whose words are kw, or -1 when none does. A nil s searches files
// directly (SearchLargest).
func (s *LevelSearch) Find(level int, files []*FileMetadata, key []byte, kw KeyWords) int {
	if s == nil || len(s.levels[level].largest) != len(files) {
		i := SearchLargest(files, key)
		if i == len(files) || bytes.Compare(files[i].Smallest.UserKey, key) > 0 {
			return -1
		}
		return i
	}
	lw := &s.levels[level]
	// The first table whose largest key is >= key: a lower bound whose
	// steps take no branch on the keys (a random key mispredicts half of
	// a search's branches), ties of the words aside.
	lo, n := 0, len(lw.largest)
	for n > 0 {
		half := n >> 1
		m := lo + half
		w := lw.largest[m]
		// less is 1 when w's words are below kw's (a 128-bit subtraction
		// borrows).
		_, b := bits.Sub64(w.Lo, kw.Lo, 0)
		_, less := bits.Sub64(w.Hi, kw.Hi, b)
		if w == kw && bytes.Compare(files[m].Largest.UserKey, key) < 0 {
			less = 1
		}
		step := int(less)
		lo += step * (half + 1)
		n = half + step*(n-2*half-1)
	}
	if lo == len(files) {
		return -1
	}
	c := lw.smallest[lo].cmp(kw)
	if c == 0 {
		c = bytes.Compare(files[lo].Smallest.UserKey, key)
	}
	if c > 0 {
		return -1
	}
	return lo
}
