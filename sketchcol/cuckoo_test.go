package sketchcol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/sievedb/sieve/sketchcol/internal/cuckoo"
	"github.com/stretchr/testify/require"
)

func TestCuckooSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*CuckooSpec)
		good bool
	}{
		{"defaults", func(*CuckooSpec) {}, true},
		{"bucket size 0", func(s *CuckooSpec) { s.BucketSize = 0 }, false},
		{"bucket size 255", func(s *CuckooSpec) { s.BucketSize = 255; s.Capacity = 510 }, true},
		{"bucket size 256", func(s *CuckooSpec) { s.BucketSize = 256 }, false},
		{"max iterations 0", func(s *CuckooSpec) { s.MaxIterations = 0 }, false},
		{"max iterations 65535", func(s *CuckooSpec) { s.MaxIterations = 65535 }, true},
		{"max iterations 65536", func(s *CuckooSpec) { s.MaxIterations = 65536 }, false},
		{"expansion 0 (no growth)", func(s *CuckooSpec) { s.Expansion = 0 }, true},
		{"expansion -1", func(s *CuckooSpec) { s.Expansion = -1 }, false},
		{"expansion 32768", func(s *CuckooSpec) { s.Expansion = 32768 }, true},
		{"expansion 32769", func(s *CuckooSpec) { s.Expansion = 32769 }, false},
		{"capacity below 2·bucket size", func(s *CuckooSpec) { s.Capacity = 3 }, false},
		{"capacity 2·bucket size", func(s *CuckooSpec) { s.Capacity = 4 }, true},
		{"capacity too large", func(s *CuckooSpec) { s.Capacity = 1 << 40 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultCuckooSpec()
			tc.edit(&s)
			err := s.Validate()
			if tc.good {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrInvalidArgument)
				_, err = CFReserveOp(s)
				require.ErrorIs(t, err, ErrInvalidArgument)
			}
		})
	}
}

func TestCuckooGeometry(t *testing.T) {
	for _, tc := range []struct {
		capacity       int64
		bucketSize     int
		expansion      int
		buckets        int64
		roundedExpands int
	}{
		{1000, 2, 1, 512, 1},
		{1024, 2, 1, 512, 1},
		{1025, 2, 1, 1024, 1},
		{1024, 4, 3, 256, 4},
		{1000, 3, 5, 512, 8},
		{4, 2, 0, 2, 0},
		{10, 1, 2, 16, 2},
	} {
		c, err := NewCuckooFilter(CuckooSpec{Capacity: tc.capacity, BucketSize: tc.bucketSize, MaxIterations: 20, Expansion: tc.expansion})
		require.NoError(t, err)
		info := c.Info()
		require.Equal(t, tc.buckets, info.NumBuckets, "%+v", tc)
		require.Equal(t, int64(tc.roundedExpands), info.ExpansionRate, "%+v", tc)
		require.Equal(t, 40+16*info.NumFilters+info.NumBuckets*info.BucketSize, info.Size, "RedisBloom's accounting, one sub-filter")
	}
}

func TestCuckooSemantics(t *testing.T) {
	c, err := NewCuckooFilter(DefaultCuckooSpec())
	require.NoError(t, err)
	in := items("in", 700)
	for _, it := range in {
		require.NoError(t, c.Add(it))
	}
	for _, it := range in {
		require.True(t, c.Exists(it), "false negative for %s", it)
		require.GreaterOrEqual(t, c.Count(it), int64(1))
	}

	// Duplicates are allowed; each delete removes one copy.
	x := []byte("dup")
	for range 3 {
		require.NoError(t, c.Add(x))
	}
	require.GreaterOrEqual(t, c.Count(x), int64(3))
	n := c.Count(x)
	require.True(t, c.Delete(x))
	require.Equal(t, n-1, c.Count(x))
	require.True(t, c.Delete(x))
	require.True(t, c.Delete(x))
	require.Equal(t, n-3, c.Count(x))

	// Delete then exists: gone (unless another item shares fingerprint and buckets).
	gone := 0
	for _, it := range in[:300] {
		require.True(t, c.Delete(it))
		if !c.Exists(it) {
			gone++
		}
	}
	require.Greater(t, gone, 290)
	for _, it := range in[300:] {
		require.True(t, c.Exists(it), "deleting others lost %s", it)
	}
	info := c.Info()
	require.Equal(t, int64(3+300), info.NumItemsDeleted)
	require.Equal(t, int64(700-300), info.NumItemsInserted)

	// ADDNX refuses possibly-present items.
	added, err := c.AddNX(in[400])
	require.NoError(t, err)
	require.False(t, added)
	added, err = c.AddNX([]byte("fresh-item"))
	require.NoError(t, err)
	require.True(t, added)

	// Delete of an item never added (and not colliding) is not found.
	absent := 0
	for _, it := range items("never", 200) {
		if !c.Exists(it) {
			require.False(t, c.Delete(it))
			absent++
		}
	}
	require.Greater(t, absent, 150)

	// FPR below the bound 2·b/255 per sub-filter.
	fp := 0
	for _, it := range items("probe", 100000) {
		if c.Exists(it) {
			fp++
		}
	}
	bound := 2 * 2 / 255.0 * float64(c.Info().NumFilters)
	t.Logf("measured FPR %.3f%%, bound %.3f%% (%d sub-filters)", float64(fp)/1000, 100*bound, c.Info().NumFilters)
	require.Less(t, float64(fp)/100000, bound)
}

func TestCuckooGrowthAndFull(t *testing.T) {
	for _, tc := range []struct {
		expansion int
		filters   int64
	}{{1, maxCuckooFilters}, {2, 11}, {0, 1}} {
		t.Run(fmt.Sprint("expansion ", tc.expansion), func(t *testing.T) {
			c, err := NewCuckooFilter(CuckooSpec{Capacity: 8, BucketSize: 2, MaxIterations: 10, Expansion: tc.expansion})
			require.NoError(t, err)
			var full error
			var added [][]byte
			for i := 0; full == nil; i++ {
				it := fmt.Appendf(nil, "g%d", i)
				before, _ := c.MarshalBinary()
				if full = c.Add(it); full != nil {
					after, _ := c.MarshalBinary()
					require.Equal(t, before, after, "a failed add leaves the filter as it was")
					break
				}
				added = append(added, it)
				if tc.expansion == 2 && c.Info().NumFilters == tc.filters {
					break // 11 sub-filters of 4·2^i buckets: enough to see the growth
				}
			}
			if tc.expansion != 2 {
				require.ErrorIs(t, full, ErrFilterFull)
				// ADDNX of an absent item that does not fit adds nothing
				// and says so (CFAddNX's reply is false, ErrFilterFull).
				for i := 0; ; i++ {
					it := fmt.Appendf(nil, "nx%d", i)
					if c.Exists(it) {
						continue
					}
					before, _ := c.MarshalBinary()
					ok, err := c.AddNX(it)
					after, _ := c.MarshalBinary()
					require.ErrorIs(t, err, ErrFilterFull)
					require.False(t, ok, "an ADDNX that finds the filter full added nothing")
					require.Equal(t, before, after)
					break
				}
			}
			require.Equal(t, tc.filters, c.Info().NumFilters)
			for _, it := range added {
				require.True(t, c.Exists(it))
			}
			for k, f := range c.filters {
				require.Equal(t, c.filters[0].Log2Buckets()+uint8(k*max(0, tc.expansion-1)), f.Log2Buckets())
			}
			enc, _ := c.MarshalBinary()
			_, err = ParseCuckoo(enc)
			require.NoError(t, err)
		})
	}
}

// TestCuckooDeleteNewestFirst: with a copy in two sub-filters, CF.DEL
// removes the one in the newest.
func TestCuckooDeleteNewestFirst(t *testing.T) {
	c, err := NewCuckooFilter(CuckooSpec{Capacity: 64, BucketSize: 2, MaxIterations: 20, Expansion: 1})
	require.NoError(t, err)
	c.filters = append(c.filters, cuckoo.New(c.filters[0].Log2Buckets(), 2))
	x := []byte("x")
	h := itemHash(x)
	fp := cuckoo.Fingerprint(h)
	for _, t2 := range c.filters {
		i1, i2 := t2.Buckets1And2(h, fp)
		require.True(t, t2.InsertFree(i1, i2, fp))
		c.items++
	}
	require.Equal(t, int64(2), c.Count(x))
	require.True(t, c.Delete(x))
	require.Equal(t, uint64(1), c.filters[0].Occupied())
	require.Equal(t, uint64(0), c.filters[1].Occupied())
}

func TestCuckooReplies(t *testing.T) {
	var m Merger
	n, err := CFAddReply(nil, nil, []byte("a"), []byte("a"))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	op, err := CFAddOp(nil, []byte("a"), []byte("a"))
	require.NoError(t, err)
	v, err := m.FullMerge(nil, nil, false, [][]byte{op})
	require.NoError(t, err)
	info, err := CFInfoReply(v)
	require.NoError(t, err)
	require.Equal(t, CFInfo{Size: 40 + 16 + 512*2, NumBuckets: 512, NumFilters: 1, NumItemsInserted: 2,
		BucketSize: 2, ExpansionRate: 1, MaxIteration: 20}, info)
	cnt, err := CFCountReply(v, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, int64(2), cnt)
	nx, err := CFAddNXReply(v, nil, []byte("a"), []byte("b"), []byte("b"))
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false}, nx)
	found, err := CFDelReply(v, []byte("a"))
	require.NoError(t, err)
	require.True(t, found)
	found, err = CFDelReply(v, []byte("b"))
	require.NoError(t, err)
	require.False(t, found)
	found, err = CFDelReply(nil, []byte("b"))
	require.NoError(t, err)
	require.False(t, found)

	v, err = m.FullMerge(nil, v, true, [][]byte{CFDelOp([]byte("a")), CFDelOp([]byte("b"))})
	require.NoError(t, err)
	cnt, err = CFCountReply(v, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, int64(1), cnt)
	ex, err := CFExistsReply(v, []byte("a"), []byte("b"))
	require.NoError(t, err)
	require.Equal(t, []bool{true, false}, ex)

	// A blind add that finds the filter full is dropped and counted.
	small, err := CFReserveOp(CuckooSpec{Capacity: 2, BucketSize: 1, MaxIterations: 1, Expansion: 0})
	require.NoError(t, err)
	adds, err := CFAddOp(nil, items("z", 10)...)
	require.NoError(t, err)
	v, err = m.FullMerge(nil, nil, false, [][]byte{small, adds})
	require.NoError(t, err)
	info, err = CFInfoReply(v)
	require.NoError(t, err)
	require.Equal(t, int64(10), info.NumItemsInserted+info.ItemsDropped)
	require.Positive(t, info.ItemsDropped)
	_, err = CFAddReply(v, nil, []byte("one-more"), []byte("and-more"), []byte("z9999"))
	require.ErrorIs(t, err, ErrFilterFull)
}

func TestCuckooDecode(t *testing.T) {
	c, err := NewCuckooFilter(CuckooSpec{Capacity: 8, BucketSize: 2, MaxIterations: 5, Expansion: 2})
	require.NoError(t, err)
	for _, it := range items("d", 12) {
		require.NoError(t, c.Add(it))
	}
	good, _ := c.MarshalBinary()
	require.Greater(t, int(good[3]), 1, "several sub-filters")
	p, err := ParseCuckoo(good)
	require.NoError(t, err)
	again, _ := p.MarshalBinary()
	require.Equal(t, good, again)

	le := binary.LittleEndian
	edit := func(f func(v []byte) []byte) []byte { return f(bytes.Clone(good)) }
	firstSlot := cuckooHeaderLen + 1
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"empty", nil},
		{"kind", edit(func(v []byte) []byte { v[0] = kindBloomValue; return v })},
		{"version", edit(func(v []byte) []byte { v[1] = 0; return v })},
		{"header cut", good[:cuckooHeaderLen-1]},
		{"bucket size 0", edit(func(v []byte) []byte { v[2] = 0; return v })},
		{"bucket size 4 mismatches the slots", edit(func(v []byte) []byte { v[2] = 4; return v })},
		{"no sub-filters", edit(func(v []byte) []byte { v[3] = 0; return v })},
		{"33 sub-filters", edit(func(v []byte) []byte { v[3] = 33; return v })},
		{"one more sub-filter than bytes", edit(func(v []byte) []byte { v[3]++; return v })},
		{"max iterations 0", edit(func(v []byte) []byte { le.PutUint16(v[4:], 0); return v })},
		{"expansion 3", edit(func(v []byte) []byte { le.PutUint16(v[6:], 3); return v })},
		{"expansion 4 mismatches", edit(func(v []byte) []byte { le.PutUint16(v[6:], 4); return v })},
		{"expansion 0 with several", edit(func(v []byte) []byte { le.PutUint16(v[6:], 0); return v })},
		{"capacity mismatches the buckets", edit(func(v []byte) []byte { le.PutUint64(v[8:], 64); return v })},
		{"capacity below 2·bucket size", edit(func(v []byte) []byte { le.PutUint64(v[8:], 3); return v })},
		{"capacity huge", edit(func(v []byte) []byte { le.PutUint64(v[8:], 1<<63); return v })},
		{"item count off", edit(func(v []byte) []byte { le.PutUint64(v[16:], 11); return v })},
		{"slot emptied", edit(func(v []byte) []byte {
			for i := firstSlot; ; i++ {
				if v[i] != 0 {
					v[i] = 0
					return v
				}
			}
		})},
		{"log2 buckets off", edit(func(v []byte) []byte { v[cuckooHeaderLen]++; return v })},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"cut", good[:len(good)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCuckoo(tc.value)
			require.ErrorIs(t, err, ErrCorruption)
		})
	}
}
