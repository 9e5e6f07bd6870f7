package sstable

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of data-driven tests in testdata/")

// dataDrivenCase is one command of a testdata file:
//
//	command arg=value ...
//	input lines
//	----
//	expected output (no blank lines; a blank line ends the case)
type dataDrivenCase struct {
	cmd      string
	args     map[string]string
	input    []string
	expected string
}

func parseDataDriven(t *testing.T, path string) (cases []*dataDrivenCase, preambles []string) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var pre []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			pre = append(pre, line)
			continue
		}
		fields := strings.Fields(line)
		c := &dataDrivenCase{cmd: fields[0], args: map[string]string{}}
		for _, a := range fields[1:] {
			k, v, _ := strings.Cut(a, "=")
			c.args[k] = v
		}
		for sc.Scan() && sc.Text() != "----" {
			c.input = append(c.input, sc.Text())
		}
		var out []string
		for sc.Scan() && sc.Text() != "" {
			out = append(out, sc.Text())
		}
		if len(out) > 0 {
			c.expected = strings.Join(out, "\n") + "\n"
		}
		preambles = append(preambles, strings.Join(pre, "\n"))
		pre = nil
		cases = append(cases, c)
	}
	require.NoError(t, sc.Err())
	return cases, preambles
}

func runDataDriven(t *testing.T, path string, run func(t *testing.T, c *dataDrivenCase) string) {
	cases, pre := parseDataDriven(t, path)
	var out strings.Builder
	for i, c := range cases {
		got := run(t, c)
		require.NotContains(t, got, "\n\n", "output must not contain blank lines")
		if !*rewrite {
			require.Equal(t, c.expected, got, "%s case %d (%s %v); rerun with -rewrite to accept", path, i, c.cmd, c.args)
		}
		if pre[i] != "" {
			out.WriteString(pre[i] + "\n")
		}
		fmt.Fprintf(&out, "%s", c.cmd)
		for _, k := range sortedKeys(c.args) {
			fmt.Fprintf(&out, " %s=%s", k, c.args[k])
		}
		out.WriteString("\n")
		for _, l := range c.input {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n" + got + "\n")
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(strings.TrimSuffix(out.String(), "\n")), 0o644))
	}
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

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

func writerOptionsFromArgs(t *testing.T, args map[string]string) WriterOptions {
	var o WriterOptions
	for k, v := range args {
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
	runDataDriven(t, "testdata/describe", func(t *testing.T, c *dataDrivenCase) string {
		require.Equal(t, "build", c.cmd)
		var kvs []kv
		for _, l := range c.input {
			kvs = append(kvs, parseKV(t, l))
		}
		data, _ := buildTable(t, kvs, writerOptionsFromArgs(t, c.args))
		r := openTable(t, data, ReaderOptions{FileNum: 1})
		require.NoError(t, r.Verify())
		var buf bytes.Buffer
		require.NoError(t, r.Describe(&buf, DescribeOptions{Entries: true}))
		return buf.String()
	})
}
