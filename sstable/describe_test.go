package sstable

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// parseKV parses "ukey#seq,KIND=value"; in the user key and value, \xNN
// escapes are decoded.
func parseKV(t *testing.T, line string) kv {
	k, v, ok := strings.Cut(line, "=")
	require.True(t, ok, "no '=' in %q", line)
	uk, rest, ok := strings.Cut(k, "#")
	require.True(t, ok, "no '#' in %q", line)
	seqStr, kindStr, ok := strings.Cut(rest, ",")
	require.True(t, ok, "no ',' in %q", line)
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	require.NoError(t, err)
	kinds := map[string]base.Kind{"DEL": base.KindDelete, "SET": base.KindSet, "MERGE": base.KindMerge}
	kind, ok := kinds[kindStr]
	require.True(t, ok, "kind %q", kindStr)
	unq := func(s string) []byte {
		u, err := strconv.Unquote(`"` + s + `"`)
		require.NoError(t, err)
		return []byte(u)
	}
	return kv{base.MakeInternalKey(unq(uk), seq, kind), unq(v)}
}

func writerOptionsFromArgs(t *testing.T, args []testutil.Arg) WriterOptions {
	var o WriterOptions
	for _, a := range args {
		k, v := a.Key, strings.Join(a.Vals, ",")
		switch k {
		case "block-size":
			o.BlockSize, _ = strconv.Atoi(v)
		case "restart-interval":
			o.BlockRestartInterval, _ = strconv.Atoi(v)
		case "compression":
			o.Compression = map[string]Compression{"none": NoCompression, "snappy": SnappyCompression}[v]
		case "filter":
			o.FilterPolicy = map[string]filter.Policy{"test.exact": exactPolicy{}}[v]
			require.NotNil(t, o.FilterPolicy, "filter %q", v)
		default:
			t.Fatalf("unknown argument %s", k)
		}
	}
	return o
}

func TestDescribe(t *testing.T) {
	testutil.RunDataDriven(t, "testdata/describe", func(t *testing.T, c *testutil.Case) string {
		require.Equal(t, "build", c.Cmd)
		var kvs []kv
		for _, l := range c.Input {
			kvs = append(kvs, parseKV(t, l))
		}
		data, _ := buildTable(t, kvs, writerOptionsFromArgs(t, c.Args))
		r := openTable(t, data, ReaderOptions{FileNum: 1})
		require.NoError(t, r.Verify())
		var buf bytes.Buffer
		require.NoError(t, r.Describe(&buf, DescribeOptions{Entries: true}))
		return buf.String()
	})
}
