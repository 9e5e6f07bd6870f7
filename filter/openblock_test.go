package filter

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var tablePolicies = []Policy{Bloom(10), StandardBloom(10), Cuckoo(12), BinaryFuse(8), Ribbon(7)}

func TestOpenBlockDispatches(t *testing.T) {
	present, absent := randomKeys(11, 5000), randomKeys(12, 5000)
	for _, p := range tablePolicies {
		data := build(p, present)
		r, err := OpenBlock(data)
		require.NoError(t, err, p.Name())
		requireNoFalseNegatives(t, r, present)
		viaPolicy, err := p.NewReader(data)
		require.NoError(t, err)
		for i := range absent.len() {
			require.Equal(t, viaPolicy.MayContain(absent.at(i)), r.MayContain(absent.at(i)))
		}
	}
}

func TestNewReaderRejectsOtherFormats(t *testing.T) {
	ks := randomKeys(13, 100)
	for wi, writer := range tablePolicies {
		data := build(writer, ks)
		for ri, reader := range append(tablePolicies, None) {
			r, err := reader.NewReader(data)
			if ri == wi {
				require.NoError(t, err, "%s reading %s", reader.Name(), writer.Name())
				continue
			}
			require.Nil(t, r)
			require.ErrorIs(t, err, ErrTypeMismatch, "%s reading %s", reader.Name(), writer.Name())
		}
	}
	for _, p := range tablePolicies {
		_, err := p.NewReader(nil)
		require.ErrorIs(t, err, ErrTypeMismatch, "%s reading an empty block", p.Name())
	}
}

func TestBloomReaderReadsOtherSizes(t *testing.T) {
	// The block carries its geometry: Bloom(10) reads a Bloom(16) block.
	ks := randomKeys(14, 1000)
	r, err := Bloom(10).NewReader(build(Bloom(16), ks))
	require.NoError(t, err)
	requireNoFalseNegatives(t, r, ks)
}

func TestOpenBlockUnknownFormat(t *testing.T) {
	for _, code := range []byte{0, 4, 5, 8, 99, 255} {
		data := append(build(Bloom(10), randomKeys(15, 100)), code)
		_, err := OpenBlock(data)
		require.ErrorIs(t, err, ErrUnknownType, "code %d", code)
		require.False(t, errors.Is(err, ErrMalformed))
		for _, p := range append(tablePolicies, None) {
			_, err := p.NewReader(data)
			require.ErrorIs(t, err, ErrUnknownType, "%s, code %d", p.Name(), code)
		}
	}
}

// TestOpenBlockTruncated opens every prefix and every one-byte-shorter
// suffix of valid blocks: each is rejected (or, for the empty prefix, is the
// None block), none panics.
func TestOpenBlockTruncated(t *testing.T) {
	for _, p := range tablePolicies {
		for _, n := range []int{0, 1, 60} {
			data := build(p, randomKeys(16, n))
			for i := range len(data) {
				r, err := OpenBlock(data[:i])
				if i == 0 {
					require.NoError(t, err)
					require.True(t, r.MayContain([]byte("x")))
					continue
				}
				if err == nil {
					// A prefix that ends in a valid format byte by chance
					// must still be self-consistent to be accepted.
					_, ierr := Inspect(data[:i])
					require.NoError(t, ierr)
					continue
				}
				require.True(t, errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnknownType), "%s prefix %d: %v", p.Name(), i, err)
			}
			_, err := OpenBlock(data[1:])
			require.Error(t, err, "%s: block missing its first byte", p.Name())
		}
	}
}

func TestOpenBlockBadTrailers(t *testing.T) {
	ks := randomKeys(17, 1000)
	corrupt := func(p Policy, fix func(trailer []byte)) error {
		data := build(p, ks)
		fix(data[len(data)-22:])
		_, err := OpenBlock(data)
		return err
	}
	le := binary.LittleEndian
	cases := []struct {
		name string
		p    Policy
		fix  func(t []byte)
	}{
		{"blocked k=0", Bloom(10), func(t []byte) { t[19] = 0 }},
		{"blocked k=65", Bloom(10), func(t []byte) { t[19] = 65 }},
		{"blocked 4 selector bits", Bloom(10), func(t []byte) { t[20] = 4 }},
		{"blocked lines+1", Bloom(10), func(t []byte) { le.PutUint32(t[15:], le.Uint32(t[15:])+1) }},
		{"blocked lines=0 with keys", Bloom(10), func(t []byte) { le.PutUint32(t[15:], 0) }},
		{"standard k=0", StandardBloom(10), func(t []byte) { t[20] = 0 }},
		{"standard m+8", StandardBloom(10), func(t []byte) { le.PutUint64(t[12:], le.Uint64(t[12:])+8) }},
		{"standard m odd", StandardBloom(10), func(t []byte) { le.PutUint64(t[12:], le.Uint64(t[12:])+1) }},
		{"cuckoo f=3", Cuckoo(12), func(t []byte) { t[20] = 3 }},
		{"cuckoo f=17", Cuckoo(12), func(t []byte) { t[20] = 17 }},
		{"cuckoo f=8", Cuckoo(12), func(t []byte) { t[20] = 8 }},
		{"cuckoo buckets-1", Cuckoo(12), func(t []byte) { le.PutUint32(t[16:], le.Uint32(t[16:])-1) }},
		{"cuckoo entries > slots", Cuckoo(12), func(t []byte) { le.PutUint64(t[8:], 1<<40) }},
	}
	for _, c := range cases {
		err := corrupt(c.p, c.fix)
		require.ErrorIs(t, err, ErrMalformed, c.name)
	}
}

func TestEmptyFilters(t *testing.T) {
	for _, p := range tablePolicies {
		data := p.NewBuilder().Finish()
		r, err := OpenBlock(data)
		require.NoError(t, err, p.Name())
		require.False(t, r.MayContain([]byte("anything")), "%s: a filter of no keys contains nothing", p.Name())
		info, err := Inspect(data)
		require.NoError(t, err)
		require.Zero(t, info.Keys)
		require.Zero(t, info.ExpectedFPR())
	}
}

func TestNone(t *testing.T) {
	b := None.NewBuilder()
	b.Add([]byte("a"))
	require.Empty(t, b.Finish())
	r, err := None.NewReader(nil)
	require.NoError(t, err)
	require.True(t, r.MayContain([]byte("a")))
	r, err = OpenBlock([]byte{})
	require.NoError(t, err)
	require.True(t, r.MayContain([]byte("b")))
	info, err := Inspect(nil)
	require.NoError(t, err)
	require.Equal(t, "no filter", info.String())
	require.Equal(t, 1.0, info.ExpectedFPR())
	fpr, ok := ExpectedFPR(None, 100)
	require.True(t, ok)
	require.Equal(t, 1.0, fpr)
}

func TestMayContainDoesNotAllocate(t *testing.T) {
	present, absent := randomKeys(18, 1000), randomKeys(19, 1000)
	for _, p := range append(tablePolicies, None) {
		r, err := OpenBlock(build(p, present))
		require.NoError(t, err)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			r.MayContain(present.at(i % 1000))
			r.MayContain(absent.at(i % 1000))
			i++
		})
		require.Zero(t, allocs, p.Name())
	}
}

// TestReadersConcurrent probes one reader from several goroutines (run it
// with -race).
func TestReadersConcurrent(t *testing.T) {
	present, absent := randomKeys(20, 20_000), randomKeys(21, 20_000)
	for _, p := range tablePolicies {
		r, err := OpenBlock(build(p, present))
		require.NoError(t, err)
		want := falsePositives(r, absent)
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for range 4 {
			wg.Go(func() {
				for i := range present.len() {
					if !r.MayContain(present.at(i)) {
						errs <- "false negative"
						return
					}
				}
				if got := falsePositives(r, absent); got != want {
					errs <- "answers differ between goroutines"
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("%s: %s", p.Name(), e)
		}
	}
}

// TestPoliciesConcurrent builds tables from one policy value in parallel.
func TestPoliciesConcurrent(t *testing.T) {
	for _, p := range tablePolicies {
		want := build(p, randomKeys(22, 3000))
		var wg sync.WaitGroup
		results := make([][]byte, 4)
		for g := range results {
			wg.Go(func() { results[g] = build(p, randomKeys(22, 3000)) })
		}
		wg.Wait()
		for _, got := range results {
			require.Equal(t, want, got, p.Name())
		}
	}
}

func TestInspect(t *testing.T) {
	ks := randomKeys(23, 10_000)
	for _, p := range tablePolicies {
		data := build(p, ks)
		info, err := Inspect(data)
		require.NoError(t, err)
		require.Equal(t, len(data), info.SizeBytes)
		require.Equal(t, uint64(10_000), info.Keys)
		exp, ok := ExpectedFPR(p, 10_000)
		require.True(t, ok)
		require.InEpsilon(t, exp, info.ExpectedFPR(), 0.01, p.Name())
		t.Log(info)
	}
	_, err := Inspect([]byte{1, 2, 3})
	require.Error(t, err)
}
