package filter

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestCuckooTableFilterBasics(t *testing.T) {
	c, err := NewCuckooTableFilter(1000, 12)
	require.NoError(t, err)
	require.Equal(t, uint32(264), c.Buckets()) // ⌈1000/3.8⌉
	require.Equal(t, 12, c.FingerprintBits())
	require.Equal(t, uint64(1000), c.Capacity())
	k := []byte("k")
	require.False(t, c.Test(k))
	require.False(t, c.Delete(k), "never added")
	require.NoError(t, c.Add(k))
	require.NoError(t, c.Add(k))
	require.True(t, c.Test(k))
	require.Equal(t, 2, c.Count(k))
	require.Equal(t, uint64(2), c.Len())
	require.True(t, c.Delete(k))
	require.True(t, c.Test(k), "one copy left")
	require.True(t, c.Delete(k))
	require.False(t, c.Test(k))
	require.False(t, c.Delete(k))
	require.Zero(t, c.Len())

	for _, f := range []int{3, 17} {
		_, err := NewCuckooTableFilter(10, f)
		require.Error(t, err)
	}
	_, err = NewCuckooTableFilter(0, 12)
	require.Error(t, err)
}

// TestCuckooTableFilterModel runs random adds and deletes against a multiset and
// checks after each step: no added key tests negative, Count(key) is at
// least its multiplicity, and Len is the multiset's size.
func TestCuckooTableFilterModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 4))
	steps := 20_000
	if raceEnabled || testing.Short() {
		steps = 4_000
	}
	for _, f := range []int{4, 8, 12, 16} {
		c, err := NewCuckooTableFilter(2000, f)
		require.NoError(t, err)
		universe := randomKeyList(rng, 3000)
		model := map[string]int{}
		total := 0
		for step := range steps {
			k := universe[rng.IntN(len(universe))]
			switch {
			case rng.IntN(3) > 0 && total < 1900:
				if err := c.Add(k); err != nil {
					require.ErrorIs(t, err, ErrFull)
					continue
				}
				model[string(k)]++
				total++
			case model[string(k)] > 0:
				require.True(t, c.Delete(k), "step %d: delete of an added key", step)
				model[string(k)]--
				total--
			}
			require.Equal(t, uint64(total), c.Len())
			if step%500 == 0 {
				for key, n := range model {
					if n > 0 {
						require.True(t, c.Test([]byte(key)), "f=%d step %d: false negative", f, step)
						require.GreaterOrEqual(t, c.Count([]byte(key)), n)
					}
				}
			}
		}
	}
}

// TestCuckooTableFilterDeleteKeepsOthers deletes half of the added keys, then
// checks that every remaining key still tests positive, and that keys never
// added and testing negative are reported as not found by Delete.
func TestCuckooTableFilterDeleteKeepsOthers(t *testing.T) {
	const n = 50_000
	c, err := NewCuckooTableFilter(n, 8) // small fingerprints: many shared ones
	require.NoError(t, err)
	ks, absent := randomKeys(51, n), randomKeys(52, n)
	for i := range n {
		require.NoError(t, c.Add(ks.at(i)))
	}
	for i := 0; i < n; i += 2 {
		require.True(t, c.Delete(ks.at(i)))
	}
	for i := 1; i < n; i += 2 {
		require.True(t, c.Test(ks.at(i)), "key %d lost by deleting others", i)
	}
	notFound := 0
	for i := range n {
		if !c.Test(absent.at(i)) {
			require.False(t, c.Delete(absent.at(i)))
			notFound++
		}
	}
	require.Greater(t, notFound, n*9/10)
	require.Equal(t, uint64(n/2), c.Len())
}

func TestCuckooTableFilterFillsToCapacity(t *testing.T) {
	n := figureKeys(t)
	for _, f := range []int{8, 12, 16} {
		c, err := NewCuckooTableFilter(uint64(n), f)
		require.NoError(t, err)
		ks := randomKeys(uint64(53+f), n)
		for i := range n {
			require.NoError(t, c.Add(ks.at(i)), "f=%d: key %d of capacity %d", f, i, n)
		}
		require.InDelta(t, 0.95, c.Load(), 0.001)
		absent := randomKeys(99, n)
		fp := 0
		for i := range n {
			if c.Test(absent.at(i)) {
				fp++
			}
		}
		t.Logf("f=%d: load %.4f, FPR %.4f%% (expected %.4f%%)", f, c.Load(), 100*float64(fp)/float64(n), 100*c.ExpectedFPR())
		require.InDelta(t, c.ExpectedFPR(), float64(fp)/float64(n), 5*sigma(c.ExpectedFPR(), n))
	}
}

// TestCuckooTableFilterFullIsUnchanged fills a small filter until Add fails and
// checks that the failed Add changed nothing.
func TestCuckooTableFilterFullIsUnchanged(t *testing.T) {
	c, err := NewCuckooTableFilter(500, 12)
	require.NoError(t, err)
	ks := randomKeys(54, 1000)
	added := 0
	for i := range 1000 {
		before, _ := c.MarshalBinary()
		if err := c.Add(ks.at(i)); err != nil {
			require.ErrorIs(t, err, ErrFull)
			after, _ := c.MarshalBinary()
			require.Equal(t, before, after, "a failed Add must leave the filter as it was")
			break
		}
		added++
	}
	require.Less(t, added, 1000)
	require.Greater(t, c.Load(), 0.96)
	for i := range added {
		require.True(t, c.Test(ks.at(i)))
	}
}

func TestCuckooTableFilterMarshal(t *testing.T) {
	for _, f := range []int{4, 7, 12, 13, 16} {
		c, _ := NewCuckooTableFilter(300, f)
		ks := randomKeys(55, 250)
		for i := range 250 {
			require.NoError(t, c.Add(ks.at(i)))
		}
		enc, err := c.MarshalBinary()
		require.NoError(t, err)
		var d CuckooTableFilter
		require.NoError(t, d.UnmarshalBinary(enc))
		for i := range 250 {
			require.True(t, d.Test(ks.at(i)))
		}
		require.Equal(t, c.Len(), d.Len())
		again, _ := d.MarshalBinary()
		require.Equal(t, enc, again)
		// The decoded filter is independent of the input buffer.
		clear(enc)
		require.True(t, d.Test(ks.at(0)))
	}
}

func TestCuckooTableFilterUnmarshalRejects(t *testing.T) {
	c, _ := NewCuckooTableFilter(100, 13) // odd f: buckets have padding bits
	require.NoError(t, c.Add([]byte("x")))
	good, _ := c.MarshalBinary()
	le := binary.LittleEndian
	mutate := func(fn func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		fn(b)
		return b
	}
	cases := map[string][]byte{
		"empty":          {},
		"header only":    good[:cuckooValueHeaderLen],
		"short":          good[:len(good)-1],
		"long":           append(append([]byte(nil), good...), 0),
		"f=3":            mutate(func(b []byte) { b[1] = 3 }),
		"f=12":           mutate(func(b []byte) { b[1] = 12 }),
		"0 buckets":      mutate(func(b []byte) { le.PutUint32(b[2:], 0) }),
		"buckets+1":      mutate(func(b []byte) { le.PutUint32(b[2:], le.Uint32(b[2:])+1) }),
		"capacity 0":     mutate(func(b []byte) { le.PutUint64(b[6:], 0) }),
		"count wrong":    mutate(func(b []byte) { le.PutUint64(b[14:], 2) }),
		"padding set":    mutate(func(b []byte) { b[cuckooValueHeaderLen+6] |= 0x80 }),
		"bloom value":    mutate(func(b []byte) { b[0] = byte(FormatStandardBloomValue) }),
		"unknown format": mutate(func(b []byte) { b[0] = 0 }),
	}
	for name, data := range cases {
		d := *c
		err := d.UnmarshalBinary(data)
		require.Error(t, err, name)
		require.Equal(t, c.Len(), d.Len(), name)
	}
	var d CuckooTableFilter
	require.ErrorIs(t, d.UnmarshalBinary(cases["bloom value"]), ErrTypeMismatch)
	require.ErrorIs(t, d.UnmarshalBinary(cases["unknown format"]), ErrUnknownType)
	require.ErrorIs(t, d.UnmarshalBinary(cases["padding set"]), ErrMalformed)
}
