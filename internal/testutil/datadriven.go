package testutil

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The one -rewrite flag of sieve's tests. With it, data-driven tests replace
// their expected outputs with the actual ones and golden files are
// rewritten; review the diff. A package's tests see the flag only if they
// import testutil, so name the packages: go test ./sstable/ ./compaction/
// -rewrite. Fuzz seed corpora are not rewritten by it (see WriteFuzzSeed).
var rewrite = flag.Bool("rewrite", false, "rewrite golden files and data-driven test expectations under testdata/")

// Rewrite reports whether the test binary runs with -rewrite.
func Rewrite() bool { return *rewrite }

// A data-driven test file (in the style of Pebble's) is a sequence of cases
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
// RunDataDriven runs a function on each case and compares its output with the
// expected one, or with -rewrite replaces the expected output (and nothing
// else: comments, commands and inputs are kept byte for byte).

// Arg is one argument of a case's command line: key, or key=v1,v2,...
type Arg struct {
	Key  string
	Vals []string
}

// Case is one case of a data-driven test file.
type Case struct {
	Pos   string // file:line of the command
	Cmd   string
	Args  []Arg
	Input []string
	// Expected holds the expected output lines, which span
	// [outStart, outEnd) of the file's lines.
	Expected []string
	outStart int
	outEnd   int
}

// Has reports whether the command line holds key.
func (d *Case) Has(key string) bool {
	_, ok := d.Arg(key)
	return ok
}

// Arg returns the values of key and whether the command line holds it.
func (d *Case) Arg(key string) ([]string, bool) {
	for _, a := range d.Args {
		if a.Key == key {
			return a.Vals, true
		}
	}
	return nil, false
}

// Str returns the values of key joined by commas, or def without them.
func (d *Case) Str(key, def string) string {
	if v, ok := d.Arg(key); ok && len(v) > 0 {
		return strings.Join(v, ",")
	}
	return def
}

// Int returns the first value of key as an integer, or def without it.
func (d *Case) Int(t testing.TB, key string, def int64) int64 {
	t.Helper()
	v, ok := d.Arg(key)
	if !ok || len(v) == 0 {
		return def
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: bad %s=%q", d.Pos, key, v[0])
	}
	return n
}

// Uints returns the values of key as unsigned integers.
func (d *Case) Uints(t testing.TB, key string) []uint64 {
	t.Helper()
	v, _ := d.Arg(key)
	var out []uint64
	for _, s := range v {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: bad %s value %q", d.Pos, key, s)
		}
		out = append(out, n)
	}
	return out
}

// ParseArgs parses the fields of a command line after the command.
func ParseArgs(fields []string) []Arg {
	var args []Arg
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		a := Arg{Key: k}
		if ok {
			a.Vals = strings.Split(v, ",")
		}
		args = append(args, a)
	}
	return args
}

func parseDataDriven(t testing.TB, path string, lines []string) []*Case {
	t.Helper()
	var cases []*Case
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		fields := strings.Fields(line)
		d := &Case{Pos: fmt.Sprintf("%s:%d", path, i+1), Cmd: fields[0], Args: ParseArgs(fields[1:])}
		i++
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != "----"; i++ {
			d.Input = append(d.Input, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s: no ---- separator", d.Pos)
		}
		i++
		d.outStart = i
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			d.Expected = append(d.Expected, lines[i])
		}
		d.outEnd = i
		cases = append(cases, d)
	}
	return cases
}

// RunDataDriven runs fn on every case of the file at path and compares (or
// with -rewrite, replaces) the expected output; a mismatch fails the test
// and the run goes on with the next case. Cases run in order and may share
// state through fn's closure. An output may not hold a blank line, which
// would end the case.
func RunDataDriven(t *testing.T, path string, fn func(t *testing.T, d *Case) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	finalNewline := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	cases := parseDataDriven(t, path, lines)
	var out []string
	prev := 0
	for _, d := range cases {
		actual := strings.TrimRight(fn(t, d), "\n")
		if strings.Contains(actual, "\n\n") {
			t.Fatalf("%s: output holds a blank line, which the format cannot represent", d.Pos)
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
		if strings.Join(got, "\n") != strings.Join(d.Expected, "\n") {
			t.Errorf("%s: %s\n%s\nwant:\n%s\ngot:\n%s\n(rerun with -rewrite to accept, then review the diff)",
				d.Pos, d.Cmd, strings.Join(d.Input, "\n"), strings.Join(d.Expected, "\n"), strings.Join(got, "\n"))
		}
	}
	if *rewrite {
		out = append(out, lines[prev:]...)
		body := strings.Join(out, "\n")
		if finalNewline {
			body += "\n"
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Golden compares got with the golden file at path, or with -rewrite
// (re)writes the file. what says what a difference means and what to do.
func Golden(t testing.TB, path, got, what string) {
	t.Helper()
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs from the output: %s\nwant:\n%s\ngot:\n%s", path, what, want, got)
	}
}

// WriteFuzzSeed keeps seed name of the fuzz target's corpus,
// testdata/fuzz/<target>/<name> in the go test fuzz v1 format, equal to
// data, which a generator in the test computes. Normally it checks: a seed
// that is missing or differs fails the test, so the committed corpus
// cannot drift from its generators as formats grow. With
// SIEVE_WRITE_FUZZ_SEEDS=1 it (re)writes the file instead. Seeds that go
// test -fuzz adds (named by their hash) are left alone either way.
func WriteFuzzSeed(t testing.TB, target, name string, data []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	path := filepath.Join(dir, name)
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if os.Getenv("SIEVE_WRITE_FUZZ_SEEDS") == "" {
		got, err := os.ReadFile(path)
		if err != nil || string(got) != body {
			t.Errorf("fuzz seed %s is missing or out of date with its generator: run SIEVE_WRITE_FUZZ_SEEDS=1 go test -run %s", path, t.Name())
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
