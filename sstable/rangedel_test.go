package sstable

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/rangedel"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

func rdFrags() []rangedel.Fragment {
	return []rangedel.Fragment{
		{Start: []byte("b"), End: []byte("d"), Seqs: []uint64{9, 4}},
		{Start: []byte("d"), End: []byte("k"), Seqs: []uint64{9}},
		{Start: []byte("m"), End: []byte("z"), Seqs: []uint64{12}},
	}
}

func buildRangeDelTable(t testing.TB, kvs []kv, frags []rangedel.Fragment, o WriterOptions) ([]byte, *WriterMetadata, error) {
	var buf bytes.Buffer
	w := NewWriter(&buf, o)
	for _, e := range kvs {
		require.NoError(t, w.Add(e.key, e.value))
	}
	if err := w.SetRangeDels(frags); err != nil {
		return nil, nil, err
	}
	md, err := w.Finish()
	return buf.Bytes(), md, err
}

// TestRangeDelTable writes tables with range tombstones and reads them
// back: format V2 only with tombstones, bounds covering them, a table of
// tombstones only, and V1 refused for them.
func TestRangeDelTable(t *testing.T) {
	kvs := []kv{{ikey("a", 3, base.KindSet), []byte("1")}, {ikey("c", 2, base.KindSet), []byte("2")}, {ikey("n", 5, base.KindDelete), nil}}
	data, md, err := buildRangeDelTable(t, kvs, rdFrags(), WriterOptions{FilterPolicy: exactPolicy{}})
	require.NoError(t, err)
	r := openTable(t, data, ReaderOptions{FileNum: 1})
	defer r.Close()
	require.Equal(t, TableFormatV2, r.Properties().FormatVersion)
	require.Equal(t, rdFrags(), r.RangeDels().Frags)
	require.Equal(t, "a", string(md.Smallest.UserKey))
	require.Equal(t, "z", string(md.Largest.UserKey), "largest is the exclusive end, conservatively")
	require.EqualValues(t, 2, md.SmallestSeq)
	require.EqualValues(t, 12, md.LargestSeq)
	require.NoError(t, r.Verify())

	// Tombstones only, ending at u+"\x00": the largest key is u itself.
	only := []rangedel.Fragment{{Start: []byte("b"), End: []byte("q\x00"), Seqs: []uint64{7}}}
	data, md, err = buildRangeDelTable(t, nil, only, WriterOptions{})
	require.NoError(t, err)
	r2 := openTable(t, data, ReaderOptions{FileNum: 2})
	defer r2.Close()
	require.Equal(t, "b", string(md.Smallest.UserKey))
	require.Equal(t, "q", string(md.Largest.UserKey))
	require.Equal(t, only, r2.RangeDels().Frags)
	it := r2.NewIter(nil, nil)
	require.False(t, it.First())
	require.NoError(t, it.Close())

	// Without tombstones the format stays V1 (readable by older readers).
	data, _ = buildTable(t, kvs, WriterOptions{})
	r3 := openTable(t, data, ReaderOptions{FileNum: 3})
	defer r3.Close()
	require.Equal(t, TableFormatV1, r3.Properties().FormatVersion)
	require.Nil(t, r3.RangeDels())

	_, _, err = buildRangeDelTable(t, kvs, rdFrags(), WriterOptions{TableFormat: TableFormatV1})
	require.Error(t, err, "V1 cannot hold range tombstones")
	bad := []rangedel.Fragment{{Start: []byte("d"), End: []byte("b"), Seqs: []uint64{1}}}
	_, _, err = buildRangeDelTable(t, kvs, bad, WriterOptions{})
	require.Error(t, err, "a reversed fragment is refused")
}

// TestRangeDelBlockCorrupt: a range-deletion block whose checksum holds
// but whose contents break the format is ErrCorruption at open.
func TestRangeDelBlockCorrupt(t *testing.T) {
	data, _, err := buildRangeDelTable(t, nil, rdFrags(), WriterOptions{Compression: NoCompression})
	require.NoError(t, err)
	enc := rangedel.Encode(nil, rdFrags())
	i := bytes.Index(data, enc)
	require.GreaterOrEqual(t, i, 0)
	data[i+2] = 'z' // the first fragment now starts after it ends
	data = fixChecksums(data)
	_, err = NewReader(testutil.NewMemFile(data), int64(len(data)), ReaderOptions{FileNum: 1})
	require.Error(t, err)
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
}

// FuzzRangeDelTable fuzzes tables holding range-deletion blocks (seeded
// with such tables), with their checksums recomputed as FuzzTable does.
func FuzzRangeDelTable(f *testing.F) {
	kvs := []kv{{ikey("a", 3, base.KindSet), []byte("1")}, {ikey("n", 5, base.KindDelete), nil}}
	for _, o := range []WriterOptions{{}, {Compression: NoCompression, FilterPolicy: exactPolicy{}}} {
		data, _, err := buildRangeDelTable(f, kvs, rdFrags(), o)
		require.NoError(f, err)
		f.Add(data)
		data, _, err = buildRangeDelTable(f, nil, rdFrags()[:1], o)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzTableOnce(data)
		fuzzTableOnce(fixChecksums(data))
	})
}

// TestRangeDelDescribe: Describe shows the range-deletion block.
func TestRangeDelDescribe(t *testing.T) {
	data, _, err := buildRangeDelTable(t, nil, rdFrags(), WriterOptions{})
	require.NoError(t, err)
	r := openTable(t, data, ReaderOptions{FileNum: 1})
	defer r.Close()
	var sb strings.Builder
	require.NoError(t, r.Describe(&sb, DescribeOptions{Entries: true}))
	require.Contains(t, sb.String(), "range deletions")
	require.Contains(t, sb.String(), `["b", "d") seqs [9 4]`)
}
