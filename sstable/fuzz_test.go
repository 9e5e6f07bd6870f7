package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The fuzz targets feed arbitrary bytes to every decoder of the package;
// the property under test is "never panics, never loops forever" (plus
// round trips where a decoder has an encoder). Seed corpora live in
// testdata/fuzz/<Name>/ and are regenerated from real tables with
//
//	SIEVE_WRITE_FUZZ_SEEDS=1 go test ./sstable -run TestWriteFuzzSeeds

// maxFuzzSteps bounds iteration over a fuzzed block or table.
const maxFuzzSteps = 5000

func FuzzBlock(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = forEachRawEntry(data, func(k, v []byte) error { return nil })
		blk, err := parseBlock(data)
		if err != nil {
			return
		}
		var it blockIter
		it.init(blk, true, errCtx{})
		var keys [][]byte
		steps := 0
		for ok := it.first(); ok && steps < maxFuzzSteps; ok = it.next() {
			keys = append(keys, append([]byte(nil), it.key...))
			steps++
		}
		it.init(blk, true, errCtx{})
		for ok := it.last(); ok && steps < 2*maxFuzzSteps; ok = it.prev() {
			steps++
		}
		keys = append(keys, nil, []byte("\xff\xff"))
		for i, k := range keys {
			if i > 50 {
				break
			}
			uk := k
			if len(k) >= base.TrailerLen {
				uk = k[:len(k)-base.TrailerLen]
			}
			it.init(blk, true, errCtx{})
			if it.seekGE(uk, seekTrailer) {
				it.prev()
				it.next()
				it.next()
			}
			it.init(blk, true, errCtx{})
			if it.seekLT(uk, seekTrailer) {
				it.next()
				it.prev()
				it.prev()
			}
		}
	})
}

func FuzzFooter(f *testing.F) {
	f.Add(footer{blockHandle{1, 2}, blockHandle{3, 4}, TableFormatV1}.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		ft, err := decodeFooter(data)
		if err != nil {
			return
		}
		if !bytes.Equal(ft.encode(), data) {
			t.Fatalf("footer %+v re-encodes differently", ft)
		}
	})
}

func FuzzProperties(f *testing.F) {
	f.Add(encodeProperties(&Properties{FormatVersion: TableFormatV1, NumEntries: 1, NumSets: 1,
		SmallestKey: ikey("a", 1, base.KindSet), LargestKey: ikey("a", 1, base.KindSet)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeProperties(data)
		if err != nil {
			return
		}
		_ = p.String()
		// What decodes must survive a round trip through the encoder.
		p2, err := decodeProperties(encodeProperties(p))
		if err != nil {
			t.Fatalf("re-encoded properties do not decode: %v", err)
		}
		if p.String() != p2.String() {
			t.Fatalf("round trip changed properties:\n%s\n%s", p, p2)
		}
	})
}

func FuzzTable(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzTableOnce(data)
		// Most mutations break a checksum and stop at the first read;
		// with the checksums made right again they reach the decoders.
		fuzzTableOnce(fixChecksums(data))
	})
}

// fixChecksums returns a copy of a (mutated) table whose footer and block
// checksums are recomputed for every block it can locate: the metaindex and
// index blocks named by the footer and the blocks their handles name.
func fixChecksums(data []byte) []byte {
	d := append([]byte(nil), data...)
	if len(d) < footerLen {
		return d
	}
	ft := d[len(d)-footerLen:]
	binary.LittleEndian.PutUint32(ft[36:], uint32(xxhash.Sum64(ft[:36])))
	fix := func(h blockHandle) []byte {
		end, ok := h.end()
		if !ok || end > uint64(len(d)) {
			return nil
		}
		n := h.offset + h.length
		binary.LittleEndian.PutUint32(d[n+1:], blockChecksum(d[h.offset:n+1]))
		v, err := decodeStored(d[h.offset:end], blockCtx(1, "fuzz", h.offset), false)
		if err != nil {
			return nil
		}
		return v.Bytes()
	}
	for _, h := range []blockHandle{
		{binary.LittleEndian.Uint64(ft[0:]), binary.LittleEndian.Uint64(ft[8:])},
		{binary.LittleEndian.Uint64(ft[16:]), binary.LittleEndian.Uint64(ft[24:])},
	} {
		raw := fix(h)
		blk, err := parseBlock(raw)
		if err != nil {
			continue
		}
		var it blockIter
		it.init(blk, false, errCtx{})
		for ok, steps := it.first(), 0; ok && steps < maxFuzzSteps; ok, steps = it.next(), steps+1 {
			if bh, ok := decodeHandle(it.val); ok {
				fix(bh)
			} else if _, n := lastUvarint(it.val); n > 0 {
				// A top-level index entry: handle, then entry count.
				if bh, ok := decodeHandle(it.val[:len(it.val)-n]); ok {
					fix(bh)
				}
			}
		}
	}
	return d
}

// fuzzTableOnce opens data as a table and reads it every way there is,
// resident and charged (through a small cache).
func fuzzTableOnce(data []byte) {
	fuzzTableWith(data, ReaderOptions{FileNum: 1, Cache: cache.New(1 << 20), Policies: fuzzPolicies()})
	fuzzTableWith(data, ReaderOptions{FileNum: 1, Cache: cache.New(4 << 10), CacheIndexAndFilter: true, Policies: fuzzPolicies()})
}

func fuzzTableWith(data []byte, o ReaderOptions) {
	{
		r, err := NewReader(testutil.NewMemFile(data), int64(len(data)), o)
		if err != nil {
			return
		}
		defer r.Close()
		_ = r.Verify()
		_ = r.Describe(io.Discard, DescribeOptions{Entries: true})
		var ukeys [][]byte
		it := r.NewIter(nil, nil)
		steps := 0
		for ok := it.First(); ok && steps < maxFuzzSteps; ok = it.Next() {
			if len(ukeys) < 20 {
				ukeys = append(ukeys, append([]byte(nil), it.Key().UserKey...))
			}
			steps++
		}
		for ok := it.Last(); ok && steps < 2*maxFuzzSteps; ok = it.Prev() {
			steps++
		}
		_ = it.Close()
		ukeys = append(ukeys, nil, []byte("m"))
		for _, k := range ukeys {
			r.MayContain(k)
			_ = r.Get(k, base.SeqNumMax, nil, func(base.InternalKey, []byte) bool { return true })
			it := r.NewIter(k, nil)
			it.SeekLT(k)
			it.Next()
			it.SeekGE(k)
			it.Prev()
			_ = it.Close()
		}
	}
}

// fuzzSeedTables are small tables of each kind the writer makes.
func fuzzSeedTables(t *testing.T) map[string][]byte {
	var kvs []kv
	for i := 0; i < 40; i++ {
		kvs = append(kvs, kv{ikey(fmt.Sprintf("key%03d", i), uint64(40-i), base.Kind(i%3)), bytes.Repeat([]byte{'v'}, i%7)})
	}
	out := map[string][]byte{}
	for name, o := range map[string]WriterOptions{
		"plain":       {BlockSize: 128, Compression: NoCompression},
		"snappy":      {BlockSize: 256, Compression: SnappyCompression, BlockRestartInterval: 4},
		"filter":      {BlockSize: 128, Compression: NoCompression, FilterPolicy: exactPolicy{}},
		"partitioned": {BlockSize: 64, Compression: NoCompression, FilterPolicy: exactPolicy{}, PartitionSize: 64},
	} {
		out[name], _ = buildTable(t, kvs, o)
	}
	for name, o := range seedFilterOptions() {
		out[name], _ = buildTable(t, kvs, o)
	}
	out["empty"], _ = buildTable(t, nil, WriterOptions{})
	return out
}

func TestWriteFuzzSeeds(t *testing.T) {
	write := func(target, name string, data []byte) { testutil.WriteFuzzSeed(t, target, name, data) }
	for name, data := range fuzzSeedTables(t) {
		write("FuzzTable", name, data)
		write("FuzzFooter", name, data[len(data)-footerLen:])
		r := openTable(t, data, ReaderOptions{Policies: fuzzPolicies()})
		props, err := r.readBlock(r.metaHandles["sieve.properties"], "properties")
		require.NoError(t, err)
		write("FuzzProperties", name, props)
		idx, err := r.readBlock(r.footer.index, "index")
		require.NoError(t, err)
		write("FuzzBlock", name+"-index", idx)
		if len(r.index) > 0 {
			blk, err := r.readBlock(r.index[0].h, "data")
			require.NoError(t, err)
			write("FuzzBlock", name+"-data", blk)
		}
		meta, err := r.readBlock(r.footer.metaindex, "metaindex")
		require.NoError(t, err)
		write("FuzzBlock", name+"-metaindex", meta)
	}
}
