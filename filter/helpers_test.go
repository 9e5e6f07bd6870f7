package filter

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

const keyLen = 16

// keySet is n keys of keyLen bytes in one slab.
type keySet []byte

func (ks keySet) len() int        { return len(ks) / keyLen }
func (ks keySet) at(i int) []byte { return ks[i*keyLen : (i+1)*keyLen : (i+1)*keyLen] }

// seqKeys returns "key%013d" of 2i+odd for i in [from, from+n): present keys
// use odd = 0 and absent keys odd = 1, so every absent key sits between two
// present ones (the case where 32-bit LevelDB-style hashes collapse).
func seqKeys(from, n, odd int) keySet {
	ks := make(keySet, 0, n*keyLen)
	for i := from; i < from+n; i++ {
		ks = fmt.Appendf(ks, "key%013d", 2*i+odd)
	}
	return ks
}

// randomKeys returns n random 16-byte keys; a set drawn with another seed is
// disjoint from it except with probability ~n²/2^128.
func randomKeys(seed uint64, n int) keySet {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	ks := make(keySet, n*keyLen)
	for i := 0; i < len(ks); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			ks[i+j] = byte(v >> (8 * j))
		}
	}
	return ks
}

func build(p Policy, ks keySet) []byte {
	b := p.NewBuilder()
	for i := range ks.len() {
		b.Add(ks.at(i))
	}
	return b.Finish()
}

// falsePositives counts the keys of absent that r reports as present.
func falsePositives(r Reader, absent keySet) int {
	n := 0
	for i := range absent.len() {
		if r.MayContain(absent.at(i)) {
			n++
		}
	}
	return n
}

// requireNoFalseNegatives fails if r rejects any key of present.
func requireNoFalseNegatives(t testing.TB, r Reader, present keySet) {
	t.Helper()
	for i := range present.len() {
		if !r.MayContain(present.at(i)) {
			t.Fatalf("false negative for added key %q (index %d)", present.at(i), i)
		}
	}
}

// iterations scales a randomized test's work down under the race detector
// and -short, where every operation is several times slower.
func iterations(n int) int {
	if raceEnabled || testing.Short() {
		return max(1, n/5)
	}
	return n
}
