package main

import (
	"bytes"
	"slices"
	"testing"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"
)

// unmix64 inverts mix64: it proves mix64 is a bijection, which is what
// keeps missing keys absent.
func unmix64(x uint64) uint64 {
	x ^= x>>31 ^ x>>62
	x *= 0x319642b2d24d8ec3 // inverse of 0x94d049bb133111eb mod 2^64
	x ^= x>>27 ^ x>>54
	x *= 0x96de1b173f119089 // inverse of 0xbf58476d1ce4e5b9
	x ^= x>>30 ^ x>>60
	return x
}

func TestMix64IsABijection(t *testing.T) {
	a, b := uint64(0x94d049bb133111eb), uint64(0xbf58476d1ce4e5b9)
	require.Equal(t, uint64(1), a*0x319642b2d24d8ec3)
	require.Equal(t, uint64(1), b*0x96de1b173f119089)
	for _, x := range []uint64{0, 1, 2, 3, 1 << 63, ^uint64(0), 0x0123456789abcdef} {
		require.Equal(t, x, unmix64(mix64(x)), "%#x", x)
	}
	for i := uint64(0); i < 100000; i++ {
		x := i * 0x9E3779B97F4A7C15
		require.Equal(t, x, unmix64(mix64(x)))
	}
}

func TestPresentAndMissingKeysAreDisjoint(t *testing.T) {
	const n = 50000
	ks := keyspace{num: n, keySize: 16}
	seen := make(map[string]bool, 2*n)
	for i := uint64(0); i < n; i++ {
		k := string(ks.present(make([]byte, 16), i))
		require.False(t, seen[k])
		seen[k] = true
	}
	for j := uint64(0); j < n; j++ {
		k := string(ks.missing(make([]byte, 16), j))
		require.False(t, seen[k], "missing key %d collides", j)
		seen[k] = true
	}
	// Missing keys decode to odd numbers, present ones to even.
	for i := uint64(0); i < 100; i++ {
		require.Equal(t, 2*i, unmix64(presentNumber(i)))
		require.Equal(t, 2*i+1, unmix64(missingNumber(i)))
	}
}

func TestKeyEncoding(t *testing.T) {
	ks := keyspace{num: 10, keySize: 20}
	k := ks.encode(make([]byte, 32), 0x0102030405060708)
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0'}, k)
	// Keys sort as their numbers.
	a, b := ks.encode(make([]byte, 20), 5), ks.encode(make([]byte, 20), 1<<40)
	require.Negative(t, bytes.Compare(a, b))
	require.Len(t, keyspace{keySize: 8}.present(make([]byte, 8), 3), 8)
}

func TestFillOrders(t *testing.T) {
	ks := keyspace{num: 5000, keySize: 16}
	sorted := ks.sortedNumbers()
	require.True(t, slices.IsSorted(sorted))
	shuffled := ks.shuffledNumbers(1)
	require.NotEqual(t, sorted, shuffled)
	require.Equal(t, ks.shuffledNumbers(1), shuffled, "same seed, same order")
	require.NotEqual(t, ks.shuffledNumbers(2), shuffled)
	got := slices.Clone(shuffled)
	slices.Sort(got)
	require.Equal(t, sorted, got, "every present key exactly once")
	want := make([]uint64, ks.num)
	for i := range want {
		want[i] = presentNumber(uint64(i))
	}
	slices.Sort(want)
	require.Equal(t, want, sorted)
	// Sorted numbers give keys in key order.
	prev := []byte{}
	for _, v := range sorted[:100] {
		k := ks.encode(make([]byte, 16), v)
		require.Positive(t, bytes.Compare(k, prev))
		prev = k
	}
}

func TestHotKeysAndSplit(t *testing.T) {
	require.Equal(t, 10000, keyspace{num: 1_000_000}.hotKeys())
	require.Equal(t, 1, keyspace{num: 50}.hotKeys())
	for _, tc := range []struct{ n, threads int }{{10, 3}, {1000000, 7}, {2, 4}, {0, 2}} {
		next := 0
		for th := 0; th < tc.threads; th++ {
			lo, hi := split(tc.n, th, tc.threads)
			require.Equal(t, next, lo)
			require.GreaterOrEqual(t, hi, lo)
			next = hi
		}
		require.Equal(t, tc.n, next)
	}
}

func TestValuesCompressAsAsked(t *testing.T) {
	for _, ratio := range []float64{0.25, 0.5, 1} {
		vs := newValueSource(100, ratio, 1)
		var raw []byte
		for range 1000 {
			v := vs.value()
			require.Len(t, v, 100)
			got := float64(len(snappy.Encode(nil, v))) / 100
			require.InDelta(t, ratio, got, 0.12, "ratio %v: each value on its own", ratio)
			raw = append(raw, v...)
		}
		got := float64(len(snappy.Encode(nil, raw))) / float64(len(raw))
		require.InDelta(t, ratio, got, 0.12, "ratio %v", ratio)
	}
	require.Empty(t, newValueSource(0, 0.5, 1).value())
	big := newValueSource(3<<20, 0.5, 1)
	a, b := big.value(), big.value()
	require.Len(t, a, 3<<20)
	require.Len(t, b, 3<<20)
	require.NotEqual(t, a[:64], b[:64], "two slots")
	small := newValueSource(7, 0.5, 3)
	seen := map[string]bool{}
	for range 1000 {
		seen[string(small.value())] = true
	}
	require.Greater(t, len(seen), 100, "values vary")
}
