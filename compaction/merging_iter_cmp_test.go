package compaction

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/base"
)

// TestCompareUserMatchesBytesCompare checks the heap's inline comparison
// against bytes.Compare on keys of 0 to 24 bytes from a small alphabet
// (so that long shared prefixes, prefixes of each other and equal keys
// all occur; each is counted).
func TestCompareUserMatchesBytesCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	key := func() []byte {
		b := make([]byte, rng.IntN(25))
		for i := range b {
			b[i] = "ab\xff"[rng.IntN(3)]
		}
		return b
	}
	var equal, prefix, longShared int
	for range 200000 {
		a, b := key(), key()
		if rng.IntN(4) == 0 {
			b = append(append([]byte(nil), a...), key()...) // a is a prefix of b
		}
		want := bytes.Compare(a, b)
		if got := compareUser(a, b); got != want {
			t.Fatalf("compareUser(%q, %q) = %d, want %d", a, b, got, want)
		}
		if got := compareInternal(base.InternalKey{UserKey: a, Trailer: 5}, base.InternalKey{UserKey: b, Trailer: 9}); want != 0 && got != want || want == 0 && got != 1 {
			t.Fatalf("compareInternal(%q#5, %q#9) = %d", a, b, got)
		}
		switch {
		case want == 0:
			equal++
		case bytes.HasPrefix(b, a) || bytes.HasPrefix(a, b):
			prefix++
		case len(a) > 8 && len(b) > 8 && bytes.Equal(a[:8], b[:8]):
			longShared++
		}
	}
	if equal == 0 || prefix == 0 || longShared == 0 {
		t.Fatalf("cases not reached: equal %d, prefix %d, shared 8-byte word %d", equal, prefix, longShared)
	}
}
