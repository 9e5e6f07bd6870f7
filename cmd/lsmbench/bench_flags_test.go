package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

func TestParseBenchFlagsDefaults(t *testing.T) {
	c, err := parseBenchFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"fillrandom", "compact", "readrandom", "readmissing", "seekrandom"}, c.Benchmarks)
	require.Equal(t, 1_000_000, c.Num)
	require.Equal(t, 200_000, c.Reads, "-reads defaults to -num, at most 200k")
	c2, err := parseBenchFlags([]string{"-num=5000"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5000, c2.Reads)
	require.Equal(t, 16, c.KeySize)
	require.Equal(t, 100, c.ValueSize)
	require.Equal(t, "bloom", c.Filter)
	require.Equal(t, "sieve.bloom.blocked/10", c.policy().Name())
	o := c.options()
	require.Equal(t, int64(8<<20), o.BlockCacheSize)
	require.Equal(t, sieve.SnappyCompression, o.Compression)
	require.Equal(t, sieve.NoSync, c.writeOptions())
	require.Equal(t, 16, c.SketchKeys)
	require.False(t, c.SketchReply)
	c3, err := parseBenchFlags([]string{"-sketch_keys=100", "-sketch_reply"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 100, c3.SketchKeys)
	require.True(t, c3.SketchReply)
	_, err = parseBenchFlags([]string{"-sketch_keys=0"}, io.Discard)
	require.ErrorContains(t, err, "-sketch_keys must be in")
}

func TestParseBenchFlags(t *testing.T) {
	c, err := parseBenchFlags([]string{
		"-benchmarks=fillseq, readhot,scan", "-num=20k", "-reads=1_000", "-key_size=24", "-value_size=0",
		"-filter=cuckoo", "-fingerprint_bits=10", "-cache_size=0", "-memtable_size=1MiB", "-block_size=16KiB",
		"-compression=none", "-sync", "-threads=4", "-seed=7", "-csv",
	}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"fillseq", "readhot", "scan"}, c.Benchmarks)
	require.Equal(t, 20_000, c.Num)
	require.Equal(t, 1000, c.Reads)
	require.Equal(t, 24, c.KeySize)
	require.Equal(t, "sieve.cuckoo/10", c.policy().Name())
	o := c.options()
	require.Negative(t, o.BlockCacheSize, "-cache_size=0 disables the cache")
	require.Equal(t, int64(1<<20), o.MemTableSize)
	require.Equal(t, 16<<10, o.BlockSize)
	require.Equal(t, sieve.NoCompression, o.Compression)
	require.Equal(t, sieve.Sync, c.writeOptions())
	require.True(t, c.CSV)

	for filter, name := range map[string]string{"standardbloom": "sieve.bloom.standard/12", "none": "sieve.none", "bloom": "sieve.bloom.blocked/12"} {
		c, err := parseBenchFlags([]string{"-filter=" + filter, "-bits_per_key=12"}, io.Discard)
		require.NoError(t, err)
		require.Equal(t, name, c.policy().Name())
	}
}

func TestParseBenchFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-benchmarks=fillrandom,nope"}, `unknown benchmark "nope"`},
		{[]string{"-benchmarks=,"}, "empty benchmark list"},
		{[]string{"-num=-5"}, "negative"},
		{[]string{"-num=0"}, "-num must be at least 1"},
		{[]string{"-num=lots"}, "not a count"},
		{[]string{"-reads=-1"}, "negative"},
		{[]string{"-key_size=4"}, "-key_size must be in [8, 65536]"},
		{[]string{"-value_size=-1"}, "-value_size"},
		{[]string{"-filter=xor"}, "-filter must be"},
		{[]string{"-bits_per_key=0"}, "-bits_per_key"},
		{[]string{"-fingerprint_bits=20"}, "-fingerprint_bits"},
		{[]string{"-cache_size=-1MiB"}, "negative"},
		{[]string{"-cache_size=big"}, "not a size"},
		{[]string{"-memtable_size=1KiB"}, "-memtable_size"},
		{[]string{"-compression=zstd"}, "-compression"},
		{[]string{"-threads=0"}, "-threads"},
		{[]string{"-use_existing_db"}, "-use_existing_db needs -db"},
		{[]string{"-json", "-csv"}, "exclusive"},
		{[]string{"-progress=maybe"}, "-progress"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
		{[]string{"readrandom"}, `unexpected argument "readrandom"`},
	} {
		_, err := parseBenchFlags(tc.args, io.Discard)
		var ue *usageError
		require.True(t, errors.As(err, &ue), "%v: want a usage error, got %v", tc.args, err)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
	_, err := parseBenchFlags([]string{"-h"}, io.Discard)
	require.ErrorIs(t, err, flag.ErrHelp)
}
