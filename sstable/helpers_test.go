package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// exactPolicy is a tiny filter for tests that do not depend on the filter
// package's implementations: the sorted xxhash64 of every key, behind a
// type byte. It has no false negatives and (practically) no false positives.
type exactPolicy struct{}

const exactFilterType = 0x7e

func (exactPolicy) Name() string               { return "test.exact" }
func (exactPolicy) NewBuilder() filter.Builder { return &exactBuilder{} }
func (exactPolicy) NewReader(data []byte) (filter.Reader, error) {
	return openExact(data)
}

func openExact(data []byte) (filter.Reader, error) {
	if len(data) < 1 || data[0] != exactFilterType {
		return nil, fmt.Errorf("test.exact: %w", filter.ErrUnknownType)
	}
	if (len(data)-1)%8 != 0 {
		return nil, fmt.Errorf("test.exact: %d bytes", len(data))
	}
	return exactReader(data[1:]), nil
}

type exactBuilder struct{ hashes []uint64 }

func (b *exactBuilder) Add(key []byte) { b.hashes = append(b.hashes, xxhash.Sum64(key)) }
func (b *exactBuilder) Finish() []byte {
	slices.Sort(b.hashes)
	out := []byte{exactFilterType}
	for _, h := range b.hashes {
		out = binary.BigEndian.AppendUint64(out, h)
	}
	return out
}

type exactReader []byte

func (r exactReader) MayContain(key []byte) bool {
	h := xxhash.Sum64(key)
	n := len(r) / 8
	i := sort.Search(n, func(i int) bool { return binary.BigEndian.Uint64(r[8*i:]) >= h })
	return i < n && binary.BigEndian.Uint64(r[8*i:]) == h
}

// kv is one model entry.
type kv struct {
	key   base.InternalKey
	value []byte
}

func ikey(ukey string, seq uint64, kind base.Kind) base.InternalKey {
	return base.MakeInternalKey([]byte(ukey), seq, kind)
}

func sortKVs(kvs []kv) {
	sort.Slice(kvs, func(i, j int) bool { return base.CompareInternal(kvs[i].key, kvs[j].key) < 0 })
}

func buildTable(t testing.TB, kvs []kv, o WriterOptions) ([]byte, *WriterMetadata) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, o)
	for _, e := range kvs {
		require.NoError(t, w.Add(e.key, e.value))
	}
	meta, err := w.Finish()
	require.NoError(t, err)
	require.EqualValues(t, buf.Len(), meta.Size)
	return buf.Bytes(), meta
}

// testPolicies are the policies tables are built with in round-trip tests:
// the package's real ones plus exactPolicy, which depends on nothing.
func testPolicies() []filter.Policy {
	return []filter.Policy{exactPolicy{}, filter.Bloom(10), filter.StandardBloom(10), filter.Cuckoo(12), filter.None}
}

func openTable(t testing.TB, data []byte, o ReaderOptions) *Reader {
	t.Helper()
	if o.Policies == nil {
		o.Policies = testPolicies()
	}
	r, err := NewReader(testutil.NewMemFile(data), int64(len(data)), o)
	require.NoError(t, err)
	return r
}

// fuzzPolicies are the policies the fuzz targets decode filters with.
func fuzzPolicies() []filter.Policy { return testPolicies() }

// seedFilterOptions are extra writer options for fuzz seed tables (one per
// real filter policy).
func seedFilterOptions() map[string]WriterOptions {
	return map[string]WriterOptions{
		"bloom":    {BlockSize: 256, FilterPolicy: filter.Bloom(10)},
		"standard": {BlockSize: 256, FilterPolicy: filter.StandardBloom(10)},
		"cuckoo":   {BlockSize: 256, FilterPolicy: filter.Cuckoo(12)},
		"prefix":   {BlockSize: 256, FilterPolicy: filter.Bloom(10), Prefix: func([]byte) int { return 1 }, PrefixName: "first1"},
		"external": {BlockSize: 256, FilterPolicy: filter.Bloom(10), ExternalID: []byte("0123456789abcdef")},
	}
}

// benchPolicies are the filter policies benchmarks compare.
func benchPolicies() []filter.Policy {
	return []filter.Policy{filter.Bloom(10), filter.StandardBloom(10), filter.Cuckoo(12)}
}
