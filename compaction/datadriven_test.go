package compaction

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A small data-driven test runner in the style of Pebble's: a test file is
// a sequence of cases
//
//	# comments and blank lines between cases
//	command arg key=value key=v1,v2
//	input line
//	...
//	----
//	expected output
//	...
//	<blank line or end of file>
//
// Run with -rewrite to replace every expected output with the actual one,
// then review the diff.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of data-driven tests")

type ddArg struct {
	key  string
	vals []string
}

type ddCase struct {
	pos   string // file:line
	cmd   string
	args  []ddArg
	input []string
	// expected output lines span [outStart, outEnd) of the file's lines.
	expected []string
	outStart int
	outEnd   int
}

func (d *ddCase) has(key string) bool {
	_, ok := d.arg(key)
	return ok
}

func (d *ddCase) arg(key string) ([]string, bool) {
	for _, a := range d.args {
		if a.key == key {
			return a.vals, true
		}
	}
	return nil, false
}

func (d *ddCase) str(key, def string) string {
	if v, ok := d.arg(key); ok && len(v) > 0 {
		return strings.Join(v, ",")
	}
	return def
}

func (d *ddCase) int(t *testing.T, key string, def int64) int64 {
	v, ok := d.arg(key)
	if !ok || len(v) == 0 {
		return def
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: bad %s=%q", d.pos, key, v[0])
	}
	return n
}

func (d *ddCase) uints(t *testing.T, key string) []uint64 {
	v, _ := d.arg(key)
	var out []uint64
	for _, s := range v {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: bad %s value %q", d.pos, key, s)
		}
		out = append(out, n)
	}
	return out
}

func parseArgs(fields []string) []ddArg {
	var args []ddArg
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		a := ddArg{key: k}
		if ok {
			a.vals = strings.Split(v, ",")
		}
		args = append(args, a)
	}
	return args
}

func parseDataDriven(t *testing.T, path string, lines []string) []*ddCase {
	var cases []*ddCase
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		fields := strings.Fields(line)
		d := &ddCase{pos: fmt.Sprintf("%s:%d", path, i+1), cmd: fields[0], args: parseArgs(fields[1:])}
		i++
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != "----"; i++ {
			d.input = append(d.input, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s: no ---- separator", d.pos)
		}
		i++
		d.outStart = i
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			d.expected = append(d.expected, lines[i])
		}
		d.outEnd = i
		cases = append(cases, d)
	}
	return cases
}

// runDataDriven runs fn on every case of the file at path and compares (or
// with -rewrite, replaces) the expected output. Cases run in order and may
// share state through fn's closure.
func runDataDriven(t *testing.T, path string, fn func(t *testing.T, d *ddCase) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	cases := parseDataDriven(t, path, lines)
	var out []string
	prev := 0
	for _, d := range cases {
		actual := strings.TrimRight(fn(t, d), "\n")
		if strings.Contains(actual, "\n\n") {
			t.Fatalf("%s: output holds a blank line, which the format cannot represent", d.pos)
		}
		got := strings.Split(actual, "\n")
		if actual == "" {
			got = nil
		}
		if *rewrite {
			out = append(out, lines[prev:d.outStart]...)
			out = append(out, got...)
			prev = d.outEnd
			continue
		}
		if strings.Join(got, "\n") != strings.Join(d.expected, "\n") {
			t.Errorf("%s: %s\n%s\nwant:\n%s\ngot:\n%s", d.pos, d.cmd, strings.Join(d.input, "\n"),
				strings.Join(d.expected, "\n"), strings.Join(got, "\n"))
		}
	}
	if *rewrite {
		out = append(out, lines[prev:]...)
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
