package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func corruptionTestTable(t *testing.T, comp Compression) ([]byte, []kv) {
	var kvs []kv
	for i := 0; i < 400; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%05d", i), uint64(i+1), base.KindSet), []byte(strings.Repeat("v", i%40))})
	}
	data, _ := buildTable(t, kvs, WriterOptions{BlockSize: 512, Compression: comp, FilterPolicy: exactPolicy{}})
	return data, kvs
}

// readEverything opens the table and reads all of it every way there is,
// returning the first error.
func readEverything(data []byte, kvs []kv) (err error) {
	return readEverythingOpts(data, kvs, ReaderOptions{FileNum: 7, Cache: cache.New(1 << 20), Policies: testPolicies()})
}

// readEverythingOpts is readEverything with a reader opened with o; every
// Get also probes the filter.
func readEverythingOpts(data []byte, kvs []kv, o ReaderOptions) (err error) {
	r, err := NewReader(testutil.NewMemFile(data), int64(len(data)), o)
	if err != nil {
		return err
	}
	defer r.Close()
	it := r.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	if err := it.Close(); err != nil {
		return err
	}
	it = r.NewIter(nil, nil)
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, e := range kvs {
		if _, err := r.ProbeFilter(e.key.UserKey, filter.HashKey(e.key.UserKey), nil); err != nil {
			return err
		}
		if err := r.Get(e.key.UserKey, base.SeqNumMax, nil, func(base.InternalKey, []byte) bool { return true }); err != nil {
			return err
		}
	}
	return r.Verify()
}

// regions names the byte ranges of each block kind of a table.
func regions(t *testing.T, data []byte) map[string][2]uint64 {
	r := openTable(t, data, ReaderOptions{})
	out := map[string][2]uint64{}
	span := func(h blockHandle) [2]uint64 { e, _ := h.end(); return [2]uint64{h.offset, e} }
	for i, e := range r.index {
		out[fmt.Sprintf("data%d", i)] = span(e.h)
	}
	out["filter"] = span(r.metaHandles["sieve.filter"])
	out["properties"] = span(r.metaHandles["sieve.properties"])
	out["metaindex"] = span(r.footer.metaindex)
	out["index"] = span(r.footer.index)
	out["footer"] = [2]uint64{uint64(len(data) - footerLen), uint64(len(data))}
	return out
}

func TestCorruptionBitFlips(t *testing.T) {
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		data, kvs := corruptionTestTable(t, comp)
		require.NoError(t, readEverything(data, kvs))
		for name, span := range regions(t, data) {
			if strings.HasPrefix(name, "data") && name != "data0" && name != "data3" {
				continue // a few data blocks are enough
			}
			t.Run(fmt.Sprintf("%s/%s", comp, name), func(t *testing.T) {
				// Every byte of small blocks, a spread of bytes in larger ones,
				// trailer bytes included.
				stride := max(uint64(1), (span[1]-span[0])/64)
				for off := span[0]; off < span[1]; off += stride {
					for _, bit := range []uint{0, 5} {
						bad := append([]byte(nil), data...)
						bad[off] ^= 1 << bit
						err := readEverything(bad, kvs)
						require.Error(t, err, "flip bit %d of byte %d went unnoticed", bit, off)
						require.ErrorIs(t, err, base.ErrCorruption, "flip at %d: %v", off, err)
						require.Contains(t, err.Error(), "000007.sst")
						require.Contains(t, err.Error(), "offset")
					}
				}
			})
		}
	}
}

func TestCorruptionTruncated(t *testing.T) {
	data, kvs := corruptionTestTable(t, SnappyCompression)
	for n := 0; n < len(data); n += 1 + n/50 {
		err := readEverything(data[:n], kvs)
		require.ErrorIs(t, err, base.ErrCorruption, "truncated to %d bytes", n)
	}
	// A table cut and padded back to its size with zeros.
	padded := append(append([]byte(nil), data[:len(data)/2]...), make([]byte, len(data)-len(data)/2)...)
	require.ErrorIs(t, readEverything(padded, kvs), base.ErrCorruption)
}

func TestCorruptionZeros(t *testing.T) {
	for _, n := range []int{0, 1, footerLen - 1, footerLen, 4096, 1 << 16} {
		err := readEverything(make([]byte, n), nil)
		require.ErrorIs(t, err, base.ErrCorruption, "%d zero bytes", n)
	}
}

// TestCorruptionHandlesOutsideFile forges a footer whose checksum is right
// but whose handles point outside the file.
func TestCorruptionHandlesOutsideFile(t *testing.T) {
	data, kvs := corruptionTestTable(t, NoCompression)
	f, err := decodeFooter(data[len(data)-footerLen:])
	require.NoError(t, err)
	for _, forged := range []footer{
		{metaindex: blockHandle{uint64(len(data)), 10}, index: f.index, format: f.format},
		{metaindex: f.metaindex, index: blockHandle{f.index.offset, 1 << 40}, format: f.format},
		{metaindex: f.metaindex, index: blockHandle{^uint64(0) - 2, 10}, format: f.format},
		{metaindex: f.metaindex, index: f.index, format: 99},
		{metaindex: f.index, index: f.metaindex, format: f.format},
	} {
		bad := append(append([]byte(nil), data[:len(data)-footerLen]...), forged.encode()...)
		err := readEverything(bad, kvs)
		require.ErrorIs(t, err, base.ErrCorruption, "%+v", forged)
	}
}

// weirdPolicy writes a filter block of a type no decoder knows.
type weirdPolicy struct{}

func (weirdPolicy) Name() string               { return "test.weird" }
func (weirdPolicy) NewBuilder() filter.Builder { return &weirdBuilder{} }
func (weirdPolicy) NewReader([]byte) (filter.Reader, error) {
	return nil, fmt.Errorf("test.weird: %w", filter.ErrUnknownType)
}

type weirdBuilder struct{}

func (*weirdBuilder) Add([]byte)     {}
func (*weirdBuilder) Finish() []byte { return []byte{1, 2, 3, 0xee} } // format code 0xee, last byte

func TestUnknownFilterType(t *testing.T) {
	kvs := []kv{{ikey("a", 1, base.KindSet), []byte("1")}, {ikey("b", 1, base.KindSet), []byte("2")}}
	data, meta := buildTable(t, kvs, WriterOptions{FilterPolicy: weirdPolicy{}})
	require.Equal(t, "test.weird", meta.Props.FilterPolicy)
	r := openTable(t, data, ReaderOptions{}) // no policy named test.weird
	require.Equal(t, FilterUnknown, r.FilterState())
	require.Error(t, r.FilterError())
	require.True(t, r.MayContain([]byte("zzz")), "an unusable filter must answer may-contain")
	require.NoError(t, r.Verify())
	var got []string
	require.NoError(t, r.Get([]byte("b"), base.SeqNumMax, nil, func(k base.InternalKey, v []byte) bool {
		got = append(got, string(v))
		return true
	}))
	require.Equal(t, []string{"2"}, got)
}

// badExactPolicy writes an exact-type filter block that its decoder refuses
// for another reason than its type: that is corruption, not an unknown type.
type badExactPolicy struct{ exactPolicy }

func (badExactPolicy) NewBuilder() filter.Builder { return &badExactBuilder{} }

type badExactBuilder struct{}

func (*badExactBuilder) Add([]byte)     {}
func (*badExactBuilder) Finish() []byte { return []byte{exactFilterType, 1, 2} }

func TestMalformedFilterIsCorruption(t *testing.T) {
	kvs := []kv{{ikey("a", 1, base.KindSet), []byte("1")}}
	data, _ := buildTable(t, kvs, WriterOptions{FilterPolicy: badExactPolicy{}})
	_, err := NewReader(testutil.NewMemFile(data), int64(len(data)), ReaderOptions{FileNum: 3, Policies: testPolicies()})
	require.ErrorIs(t, err, base.ErrCorruption)
	require.Contains(t, err.Error(), "filter block")
}

type failingFile struct{ testutil.MemFile }

var errDisk = errors.New("disk on fire")

func (f *failingFile) ReadAt(p []byte, off int64) (int, error) {
	if off < int64(len(f.Data))-footerLen {
		return 0, errDisk
	}
	return f.MemFile.ReadAt(p, off)
}

func TestIOErrorIsNotCorruption(t *testing.T) {
	data, _ := corruptionTestTable(t, NoCompression)
	_, err := NewReader(&failingFile{testutil.MemFile{Data: data}}, int64(len(data)), ReaderOptions{})
	require.ErrorIs(t, err, errDisk)
	require.NotErrorIs(t, err, base.ErrCorruption)
}

// TestVerifyKeyOrder writes blocks whose keys are out of order (bypassing
// Writer.Add's check) with valid checksums: only Verify can tell.
func TestVerifyKeyOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks [][]string // user keys per data block, all seq 1
	}{
		{"within a block", [][]string{{"b", "a"}}},
		{"duplicate within a block", [][]string{{"a", "a"}}},
		{"across blocks", [][]string{{"c"}, {"b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf, WriterOptions{BlockSize: 1 << 20})
			for bi, keys := range tc.blocks {
				for _, k := range keys {
					key := ikey(k, 1, base.KindSet)
					w.data.add(key.AppendEncoded(nil), nil)
					w.updateProps(key, nil)
					w.lastKey = key.AppendEncoded(w.lastKey[:0])
				}
				if bi < len(tc.blocks)-1 {
					w.flushDataBlock()
					w.addIndexEntry(w.lastKey) // separator = last key
				}
			}
			_, err := w.Finish()
			require.NoError(t, err)
			// Separators out of order are caught when the index is loaded,
			// keys out of order by Verify.
			r, err := NewReader(testutil.NewMemFile(buf.Bytes()), int64(buf.Len()), ReaderOptions{FileNum: 12})
			if err == nil {
				err = r.Verify()
			}
			require.ErrorIs(t, err, base.ErrCorruption)
			require.Contains(t, err.Error(), "000012.sst: ")
			require.Contains(t, err.Error(), "block at offset")
		})
	}
}

// TestLayoutCoversFile checks that Layout's blocks tile the whole file.
func TestLayoutCoversFile(t *testing.T) {
	data, _ := corruptionTestTable(t, SnappyCompression)
	r := openTable(t, data, ReaderOptions{})
	kinds := layoutKinds(t, r, data)
	require.EqualValues(t, r.Properties().NumDataBlocks, kinds["data"])
	for _, k := range []string{"filter", "properties", "metaindex", "index", "footer"} {
		require.Equal(t, 1, kinds[k], k)
	}
}

// layoutKinds checks that r's Layout tiles data, the whole table, and
// counts its blocks by kind.
func layoutKinds(t *testing.T, r *Reader, data []byte) map[string]int {
	var end uint64
	kinds := map[string]int{}
	for _, b := range r.Layout() {
		require.Equal(t, end, b.Offset, "%s block", b.Kind)
		end = b.Offset + b.Length
		kinds[b.Kind]++
	}
	require.EqualValues(t, len(data), end)
	return kinds
}
