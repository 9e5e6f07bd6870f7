package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestIndexWordsSearch checks the resident index's word search against
// the plain binary search (searchIndex) on random sorted separators: keys
// of random lengths over a small alphabet behind a shared prefix, so that
// words tie (keys equal in the 8 bytes after the prefix, or shorter than
// 8), keys equal with different trailers, and search keys outside the
// shared prefix on both sides. It counts that each case was reached.
func TestIndexWordsSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	var ties, below, above, exact, lastOut int
	for trial := 0; trial < 300; trial++ {
		prefix := []byte("pre")[:rng.Intn(4)]
		gen := func() []byte {
			k := append([]byte{}, prefix...)
			for n := rng.Intn(12); n > 0; n-- {
				k = append(k, "ab\x00z"[rng.Intn(4)])
			}
			return k
		}
		index := make([]indexEntry, rng.Intn(40))
		for i := range index {
			index[i] = indexEntry{sepUser: gen(), sepTrailer: uint64(rng.Intn(4))}
		}
		sort.Slice(index, func(i, j int) bool {
			c := bytes.Compare(index[i].sepUser, index[j].sepUser)
			return c < 0 || (c == 0 && index[i].sepTrailer > index[j].sepTrailer)
		})
		if len(index) > 1 && rng.Intn(2) == 0 {
			// A table's last separator: a short successor of its last
			// key, outside the others' prefix ("{" > "z…", "q" > "pre…").
			index[len(index)-1].sepUser = []byte{"{q"[min(len(prefix), 1)]}
		}
		w := newIndexWords(index)
		if len(w.keys) < len(index) {
			lastOut++
		}
		for q := 0; q < 50; q++ {
			var ukey []byte
			switch rng.Intn(4) {
			case 0:
				ukey = []byte("p\xff")[:rng.Intn(3)] // around the prefix
			case 1:
				if len(index) > 0 {
					ukey = index[rng.Intn(len(index))].sepUser
					exact++
				}
			default:
				ukey = gen()
			}
			trailer := uint64(rng.Intn(5))
			lo, hi := w.wordRange(ukey, len(index))
			got := lo + searchIndex(index[lo:hi], ukey, trailer)
			require.Equal(t, searchIndex(index, ukey, trailer), got, "key %q trailer %d in %d separators", ukey, trailer, len(index))
			switch {
			case hi-lo > 1:
				ties++
			case len(index) > 0 && lo == 0 && hi == 0 && !bytes.HasPrefix(ukey, w.lcp):
				below++
			case len(index) > 0 && lo == len(w.keys) && !bytes.HasPrefix(ukey, w.lcp):
				above++
			}
		}
	}
	t.Logf("ties %d, below the prefix %d, above it %d, exact keys %d, last separator outside the prefix %d", ties, below, above, exact, lastOut)
	require.NotZero(t, lastOut)
	require.NotZero(t, ties)
	require.NotZero(t, below)
	require.NotZero(t, above)
	require.NotZero(t, exact)
}

// BenchmarkIndexSearch compares the plain binary search of a resident
// index (searchIndex) with the word search in front of it, on 8k
// separators of peerbench-like keys (16 bytes sharing a 9-byte prefix).
func BenchmarkIndexSearch(b *testing.B) {
	const n = 8192
	index := make([]indexEntry, n)
	for i := range index {
		index[i] = indexEntry{sepUser: fmt.Appendf(nil, "key%013d", 2*i*120)}
	}
	index[n-1].sepUser = []byte("l") // the last block's short successor
	w := newIndexWords(index)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%013d", (i*7919)%(2*n*120))
	}
	b.Run("plain", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = searchIndex(index, keys[i%len(keys)], seekTrailer)
		}
	})
	b.Run("words", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k := keys[i%len(keys)]
			lo, hi := w.wordRange(k, len(index))
			_ = lo + searchIndex(index[lo:hi], k, seekTrailer)
		}
	})
}
