package sstable

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/cache"
	"github.com/stretchr/testify/require"
)

// first4 cuts a key's first four bytes as its prefix.
func first4(k []byte) int { return 4 }

// TestPrefixFilter builds tables whose filters hold the keys' prefixes
// and checks, for every policy that takes hashes: each present prefix
// passes, absent prefixes are mostly ruled out, the prefix entries answer
// for no whole key (and whole keys for no prefix), and a table written
// without Prefix records no extractor.
func TestPrefixFilter(t *testing.T) {
	var kvs []kv
	for p := 0; p < 200; p++ {
		for j := 0; j < 5; j++ {
			kvs = append(kvs, kv{key: ikey(fmt.Sprintf("p%03d/%d", p, j), 1, base.KindSet), value: []byte("v")})
		}
	}
	sortKVs(kvs)
	for _, pol := range []filter.Policy{filter.Bloom(10), filter.StandardBloom(10), filter.Cuckoo(12), filter.BinaryFuse(8), filter.Ribbon(10)} {
		t.Run(pol.Name(), func(t *testing.T) {
			data, meta := buildTable(t, kvs, WriterOptions{FilterPolicy: pol, Prefix: first4, PrefixName: "first4"})
			require.EqualValues(t, 200, meta.Props.FilterPrefixes)
			require.Equal(t, "first4", meta.Props.PrefixExtractor)
			r := openTable(t, data, ReaderOptions{Policies: []filter.Policy{pol}})
			defer r.Close()
			require.True(t, r.PrefixUsable("first4"))
			require.False(t, r.PrefixUsable("other"))
			require.Equal(t, "first4", r.Properties().PrefixExtractor)
			for p := 0; p < 200; p++ {
				ok, err := r.ProbePrefix([]byte(fmt.Sprintf("p%03d", p)), filter.HashPrefix([]byte(fmt.Sprintf("p%03d", p))), nil)
				require.NoError(t, err)
				require.True(t, ok, "present prefix %d ruled out", p)
			}
			var absentPass, keyAsPrefix, prefixAsKey int
			for p := 200; p < 2200; p++ {
				if ok, _ := r.ProbePrefix([]byte(fmt.Sprintf("p%03d", p)), filter.HashPrefix([]byte(fmt.Sprintf("p%03d", p))), nil); ok {
					absentPass++
				}
			}
			for p := 0; p < 200; p++ {
				// A whole key probed as a prefix, and a prefix probed
				// as a whole key: neither was added as such.
				if ok, _ := r.ProbePrefix([]byte(fmt.Sprintf("p%03d/0", p)), filter.HashPrefix([]byte(fmt.Sprintf("p%03d/0", p))), nil); ok {
					keyAsPrefix++
				}
				if r.MayContain([]byte(fmt.Sprintf("p%03d", p))) {
					prefixAsKey++
				}
			}
			require.Less(t, absentPass, 2000/20, "absent prefixes passing")
			require.Less(t, keyAsPrefix, 200/10)
			require.Less(t, prefixAsKey, 200/10)
		})
	}
	t.Run("no-prefix", func(t *testing.T) {
		data, meta := buildTable(t, kvs, WriterOptions{FilterPolicy: filter.Bloom(10)})
		require.Zero(t, meta.Props.FilterPrefixes)
		r := openTable(t, data, ReaderOptions{})
		defer r.Close()
		require.False(t, r.PrefixUsable("first4"))
		require.NotContains(t, r.Properties().String(), "prefix")
	})
	t.Run("none-policy", func(t *testing.T) {
		_, meta := buildTable(t, kvs, WriterOptions{FilterPolicy: filter.None, Prefix: first4, PrefixName: "first4"})
		require.Zero(t, meta.Props.FilterPrefixes)
		require.Empty(t, meta.Props.PrefixExtractor)
	})
	t.Run("charged", func(t *testing.T) {
		data, _ := buildTable(t, kvs, WriterOptions{FilterPolicy: filter.Bloom(10), Prefix: first4, PrefixName: "first4"})
		r := openTable(t, data, ReaderOptions{FileNum: 1, Cache: cache.New(1 << 20), CacheIndexAndFilter: true})
		defer r.Close()
		var st ReadStats
		ok, err := r.ProbePrefix([]byte("p007"), filter.HashPrefix([]byte("p007")), &st)
		require.NoError(t, err)
		require.True(t, ok)
	})
}
