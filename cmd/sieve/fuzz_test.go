package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Random and mutated input for each file parser: the commands must give an
// error or a result, never a panic, and exit 0 or 1.

type parser struct {
	name string     // file name to write the input as
	cmds [][]string // commands to run on it (the path is appended)
	glob string     // seed files in the generated database
}

var parsers = []parser{
	{"000001.sst", [][]string{{"sstable", "dump", "-n", "0"}, {"sstable", "check"}, {"sstable", "props"}}, "*.sst"},
	// Not the database's names, so the log number comes from the header
	// and a mutated copy of a real log is not refused for its name.
	{"fuzz.log", [][]string{{"wal", "dump", "-n", "0"}}, "*.log"},
	{"fuzz.manifest", [][]string{{"manifest", "dump"}}, "MANIFEST-*"},
}

// seeds returns the smallest file of each parser's kind in the database.
func seeds(t testing.TB, dir string, p parser) []byte {
	var best []byte
	for _, f := range filesOf(t, dir, p.glob) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if best == nil || len(b) < len(best) {
			best = b
		}
	}
	return best
}

func runParser(t *testing.T, p parser, data []byte) {
	path := filepath.Join(t.TempDir(), p.name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range p.cmds {
		args := append(append([]string(nil), cmd...), path)
		r := sieveRun(t, args...) // fails the test on a panic
		switch {
		case r.code != 0 && r.code != 1:
			t.Fatalf("sieve %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		case r.code == 1 && !strings.HasPrefix(r.stderr, "sieve: "):
			t.Fatalf("sieve %s: exit 1 without an error message\n%s", strings.Join(args, " "), r.stderr)
		}
	}
}

func mutate(rng *rand.Rand, b []byte) []byte {
	b = append([]byte(nil), b...)
	switch rng.IntN(5) {
	case 0: // truncate
		return b[:rng.IntN(len(b)+1)]
	case 1: // random bytes, of a random length
		out := make([]byte, rng.IntN(200))
		for i := range out {
			out[i] = byte(rng.Uint32())
		}
		return out
	case 2: // zero a range
		if len(b) > 0 {
			i := rng.IntN(len(b))
			clear(b[i:min(len(b), i+1+rng.IntN(64))])
		}
		return b
	default: // change a few bytes
		for range 1 + rng.IntN(8) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		}
		return b
	}
}

func TestRandomInputs(t *testing.T) {
	dir, _ := genDB(t)
	rng := rand.New(rand.NewPCG(7, 7))
	n := 150
	if testing.Short() {
		n = 30
	}
	for _, p := range parsers {
		seed := seeds(t, dir, p)
		for range n {
			runParser(t, p, mutate(rng, seed))
		}
		for _, b := range [][]byte{nil, {0}, make([]byte, 48), make([]byte, 36), []byte(strings.Repeat("sievelog", 10))} {
			runParser(t, p, b)
		}
	}
	// Directory commands on a database with one file damaged at random.
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range n / 10 {
		d := t.TempDir()
		copyDir(t, dir, d)
		f := filepath.Join(d, files[rng.IntN(len(files))].Name())
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, mutate(rng, b), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{{"check"}, {"lsm", "-probes", "10"}, {"manifest", "dump"}} {
			r := sieveRun(t, append(cmd, d)...)
			if r.code != 0 && r.code != 1 {
				t.Fatalf("sieve %s after damaging %s: exit %d\n%s", cmd, filepath.Base(f), r.code, r.stderr)
			}
		}
	}
}

func fuzzParser(f *testing.F, p parser) {
	dir, _ := genDB(f)
	f.Add(seeds(f, dir, p))
	f.Add([]byte{})
	f.Add(make([]byte, 48))
	f.Fuzz(func(t *testing.T, data []byte) { runParser(t, p, data) })
}

func FuzzSSTable(f *testing.F)  { fuzzParser(f, parsers[0]) }
func FuzzWAL(f *testing.F)      { fuzzParser(f, parsers[1]) }
func FuzzManifest(f *testing.F) { fuzzParser(f, parsers[2]) }
