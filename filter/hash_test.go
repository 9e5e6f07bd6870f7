package filter

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHashCollector(t *testing.T) {
	var c hashCollector
	want := []uint64{}
	for i := range 3*hashChunk + 5 {
		k := fmt.Appendf(nil, "k%d", i/2) // every key twice in a row
		c.add(k)
		if i%2 == 0 {
			want = append(want, hashKey(k))
		}
	}
	c.add(fmt.Appendf(nil, "k%d", 0)) // a duplicate, not in a row
	want = append(want, hashKey([]byte("k0")))
	l := c.take()
	require.Equal(t, len(want), l.len())
	var got []uint64
	for _, ch := range l.chunks {
		require.LessOrEqual(t, len(ch), hashChunk)
		got = append(got, ch...)
	}
	require.Equal(t, want, got)
	require.Zero(t, c.take().len(), "take resets")
}

func TestReduce(t *testing.T) {
	require.Equal(t, uint32(0), reduce32(0, 10))
	require.Equal(t, uint32(9), reduce32(0xFFFFFFFF, 10))
	require.Equal(t, uint32(5), reduce32(0x80000000, 10))
	require.Equal(t, uint64(9), reduce64(^uint64(0), 10))
	require.Equal(t, uint32(0), reduce32(12345, 0))
}
