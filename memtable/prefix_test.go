package memtable

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// TestMemTablePrefix checks that a memtable's key filter holds its keys'
// prefixes under the name it was given: present prefixes pass, absent
// ones are mostly ruled out, another name or no prefix function rules
// nothing out, and the whole-key answers are unchanged.
func TestMemTablePrefix(t *testing.T) {
	m := NewWithFilter(1 << 16)
	m.SetPrefix(func([]byte) int { return 4 }, "first4")
	for p := 0; p < 500; p++ {
		for j := 0; j < 4; j++ {
			m.Add(uint64(p*4+j+1), base.KindSet, []byte(fmt.Sprintf("p%03d/%d", p, j)), nil)
		}
	}
	absent := 0
	for p := 0; p < 1000; p++ {
		h := filter.HashPrefix([]byte(fmt.Sprintf("p%03d", p)))
		if p < 500 {
			require.True(t, m.MayContainPrefix("first4", h))
		} else if m.MayContainPrefix("first4", h) {
			absent++
		}
		require.True(t, m.MayContainPrefix("other", h))
	}
	require.Less(t, absent, 50, "absent prefixes passing")
	var got int
	m.Get([]byte("p007/3"), base.SeqNumMax, func(base.InternalKey, []byte) bool { got++; return false })
	require.Equal(t, 1, got)
	plain := NewWithFilter(1 << 16)
	plain.Add(1, base.KindSet, []byte("p000/0"), nil)
	require.True(t, plain.MayContainPrefix("first4", filter.HashPrefix([]byte("p999"))))
}

// BenchmarkAddFilter measures what the prefix entries add to a Put's
// memtable insert (random 16-byte keys, so every key's 8-byte prefix is
// new): go test -bench AddFilter ./memtable
func BenchmarkAddFilter(b *testing.B) {
	for _, withPrefix := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefix=%v", withPrefix), func(b *testing.B) {
			m := NewWithFilter(int64(b.N)*10 + 64)
			if withPrefix {
				m.SetPrefix(func([]byte) int { return 8 }, "first8")
			}
			key := make([]byte, 16)
			val := make([]byte, 100)
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < b.N; i++ {
				rng.Read(key)
				m.Add(uint64(i+1), base.KindSet, key, val)
			}
		})
	}
}
