package manifest

import (
	"bytes"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
)

// TestKeyWordsOrder checks that two keys' words, where they differ, order
// the keys as bytes.Compare does, on keys built to share long prefixes,
// end in zero bytes and be prefixes of each other.
func TestKeyWordsOrder(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	decided := 0
	for i := 0; i < 200000; i++ {
		a, b := levelSearchKey(rng), levelSearchKey(rng)
		c := MakeKeyWords(a).cmp(MakeKeyWords(b))
		if c == 0 {
			continue
		}
		decided++
		if want := bytes.Compare(a, b); c != want {
			t.Fatalf("words of %x and %x compare %d, the keys %d", a, b, c, want)
		}
	}
	if decided < 100000 {
		t.Fatalf("only %d of 200000 pairs had different words", decided)
	}
}

// levelSearchKey draws a key from a small alphabet with zero bytes, of 0
// to 24 bytes, so that keys often share their first 8 bytes (the second
// word decides) or 16 (equal words: the bytes past them decide).
func levelSearchKey(rng *rand.Rand) []byte {
	k := make([]byte, rng.IntN(25))
	for i := range k {
		k[i] = []byte{0, 1, 'a', 0xff}[rng.IntN(4)]
	}
	switch r := rng.IntN(3); {
	case r == 0 && len(k) > 16:
		copy(k, "0123456789abcdef") // a shared 16-byte prefix: equal words
	case r == 1 && len(k) > 8:
		copy(k, "01234567") // a shared first word: the second decides
	}
	return k
}

// TestLevelSearchFind compares Find with a search of the tables' own keys
// on random sorted levels, for keys inside tables, in the gaps between
// them and outside the level, and checks that the cases where the words
// tie (and the bytes decide) were reached.
func TestLevelSearchFind(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	var ties, secondWord, hits, misses int
	for round := 0; round < 2000; round++ {
		// Distinct sorted keys, paired into non-overlapping tables
		// [keys[2i], keys[2i+1]] (a table may also hold one key).
		set := map[string]bool{}
		for len(set) < 2+rng.IntN(40) {
			set[string(levelSearchKey(rng))] = true
		}
		var keys []string
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var files []*FileMetadata
		for i := 0; i < len(keys); {
			j := i
			if rng.IntN(4) > 0 && i+1 < len(keys) {
				j = i + 1
			}
			files = append(files, &FileMetadata{
				FileNum:  uint64(len(files) + 1),
				Smallest: base.MakeInternalKey([]byte(keys[i]), 1, base.KindSet),
				Largest:  base.MakeInternalKey([]byte(keys[j]), 1, base.KindSet),
			})
			i = j + 1
			if rng.IntN(3) == 0 {
				i++ // a gap: that key is in no table
			}
		}
		var lv Levels
		level := 1 + rng.IntN(NumLevels-1)
		lv[level] = files
		s := newLevelSearch(&lv)
		for q := 0; q < 50; q++ {
			var key []byte
			if rng.IntN(2) == 0 {
				key = []byte(keys[rng.IntN(len(keys))])
			} else {
				key = levelSearchKey(rng)
			}
			kw := MakeKeyWords(key)
			tie, second := false, false
			for _, f := range files {
				for _, w := range []KeyWords{MakeKeyWords(f.Smallest.UserKey), MakeKeyWords(f.Largest.UserKey)} {
					tie = tie || w == kw
					second = second || (w.Hi == kw.Hi && w.Lo != kw.Lo)
				}
			}
			if tie {
				ties++
			}
			if second {
				secondWord++
			}
			want := (*LevelSearch)(nil).Find(level, files, key, kw)
			got := s.Find(level, files, key, kw)
			if got != want {
				t.Fatalf("seed %d round %d: Find(%x) = %d, the tables' keys say %d", seed, round, key, got, want)
			}
			if want >= 0 {
				hits++
				f := files[want]
				if bytes.Compare(f.Smallest.UserKey, key) > 0 || bytes.Compare(f.Largest.UserKey, key) < 0 {
					t.Fatalf("seed %d: reference search returned a table not holding %x", seed, key)
				}
			} else {
				misses++
			}
		}
	}
	if ties < 1000 || secondWord < 1000 || hits < 1000 || misses < 1000 {
		t.Fatalf("cases not reached: %d word ties, %d first-word ties, %d keys in a table, %d in none", ties, secondWord, hits, misses)
	}
	t.Logf("%d word ties, %d first-word ties, %d keys in a table, %d in none", ties, secondWord, hits, misses)
}

// TestVersionLevelSearch checks that a version made by Apply has a
// search index (built at its first lookup) that agrees with its levels,
// and that an unknown family has none (Find then searches the tables).
func TestVersionLevelSearch(t *testing.T) {
	v := &Version{CFs: map[uint32]*Levels{DefaultCFID: {}}}
	if v.LevelSearch(7) != nil {
		t.Fatal("a family the version does not have has a search index")
	}
	var e VersionEdit
	for i, r := range [][2]string{{"a", "c"}, {"e", "g"}, {"k", "m"}} {
		e.NewFiles = append(e.NewFiles, NewFile{CF: DefaultCFID, Level: 6, Meta: &FileMetadata{
			FileNum:     uint64(i + 1),
			Smallest:    base.MakeInternalKey([]byte(r[0]), 1, base.KindSet),
			Largest:     base.MakeInternalKey([]byte(r[1]), 1, base.KindSet),
			SmallestSeq: 1, LargestSeq: 1,
		}})
	}
	nv, err := v.Apply(&e, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := nv.LevelSearch(DefaultCFID)
	if s == nil {
		t.Fatal("no search index for the version's family")
	}
	files := nv.Levels(DefaultCFID)[6]
	for key, want := range map[string]int{"a": 0, "b": 0, "d": -1, "f": 1, "h": -1, "l": 2, "z": -1, "": -1} {
		if got := s.Find(6, files, []byte(key), MakeKeyWords([]byte(key))); got != want {
			t.Errorf("Find(%q) = %d, want %d", key, got, want)
		}
	}
}
