package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/sievedb/sieve/internal/manifest"
	"github.com/sievedb/sieve/vfs"
)

// The corruption matrix of the tool, after reliability_corruption_test.go:
// every kind of file (each block kind of a table and its footer, the WAL,
// the manifest, CURRENT) damaged by a bit flip, a zeroed range and a
// truncation. The command that reads the file and "sieve check" on the
// directory must report it: exit status 1, an error naming the file, no
// panic, and the directory unchanged. The exceptions are the damages that
// are indistinguishable from a crash (a log cut short reads as a torn
// tail): the log's dump says so and exits 0, and "sieve check" still fails
// when the rest of the directory proves the damage.

type damage struct {
	name  string
	apply func(b []byte) []byte
}

func flip(off int) damage {
	return damage{fmt.Sprintf("bit flip at %d", off), func(b []byte) []byte {
		b = append([]byte(nil), b...)
		b[off] ^= 0x10
		return b
	}}
}

func zero(off, n int) damage {
	return damage{fmt.Sprintf("%d bytes zeroed at %d", n, off), func(b []byte) []byte {
		b = append([]byte(nil), b...)
		clear(b[off:min(off+n, len(b))])
		return b
	}}
}

func truncate(n int) damage {
	return damage{fmt.Sprintf("truncated to %d bytes", n), func(b []byte) []byte { return append([]byte(nil), b[:n]...) }}
}

type corruptCase struct {
	target string   // what is damaged
	file   string   // base name of the file damaged
	d      damage   // how
	cmd    []string // the file command (the path is appended)
	// torn: the damage reads as a torn tail: the file command exits 0
	// and says so.
	torn bool
	// checkMayPass: the damage leaves a state a crash can leave, so "sieve
	// check" may pass, but must say the file ends torn.
	checkMayPass bool
}

// tableFiles returns an L6 and an L0 table of the default family.
func tableFiles(t *testing.T, dir string) []string {
	vs, err := manifest.Load(vfs.Default, dir, manifest.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	v := vs.Current()
	defer v.Unref()
	lv := v.CFs[manifest.DefaultCFID]
	if len(lv[6]) == 0 || len(lv[0]) == 0 {
		t.Fatalf("want tables in L0 and L6, have\n%s", v)
	}
	return []string{base.FileName(base.FileTypeTable, lv[6][0].FileNum), base.FileName(base.FileTypeTable, lv[0][0].FileNum)}
}

func corruptCases(t *testing.T, dir string) []corruptCase {
	var cases []corruptCase
	for _, name := range tableFiles(t, dir) {
		cases = append(cases, tableCases(t, dir, name)...)
	}
	logs := filesOf(t, dir, "*.log")
	mans := filesOf(t, dir, "MANIFEST-*")
	cases = append(cases, logCases(t, "WAL", logs[len(logs)-1], []string{"wal", "dump"})...)
	cases = append(cases, logCases(t, "manifest", mans[len(mans)-1], []string{"manifest", "dump"})...)
	cases = append(cases, misplacedChunkCase(t, logs[len(logs)-1]))
	for _, d := range []damage{flip(1), flip(5), flip(20), flip(35), truncate(10), truncate(0)} {
		cases = append(cases, corruptCase{target: "CURRENT", file: "CURRENT", d: d, cmd: []string{"manifest", "dump"}})
	}
	return cases
}

// tableCases damages the first block of each kind of the table name (a
// bit flip in its middle, its first 8 bytes zeroed) for "sstable check"
// and "sstable dump", and cuts the table short for "sstable check" and
// "sstable props".
func tableCases(t *testing.T, dir, name string) []corruptCase {
	tb, err := openTable(vfs.Default, filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	var cases []corruptCase
	seen := map[string]bool{}
	for _, loc := range tb.r.Layout() {
		if seen[loc.Kind] {
			continue // the first block of each kind
		}
		seen[loc.Kind] = true
		mid := int(loc.Offset + loc.Length/2)
		for _, d := range []damage{flip(mid), zero(int(loc.Offset), 8)} {
			for _, cmd := range [][]string{{"sstable", "check"}, {"sstable", "dump"}} {
				cases = append(cases, corruptCase{target: "table " + loc.Kind + " block", file: name, d: d, cmd: cmd})
			}
		}
	}
	size := int(tb.size)
	for _, n := range []int{0, 47, size / 2, size - 1} {
		for _, cmd := range [][]string{{"sstable", "check"}, {"sstable", "props"}} {
			cases = append(cases, corruptCase{target: "table", file: name, d: truncate(n), cmd: cmd})
		}
	}
	return cases
}

// logCases damages the log at path (target is "WAL" or "manifest") for
// its dump command cmd: bit flips and a zeroed range that the dump must
// report, and the damages that read as a torn tail.
func logCases(t *testing.T, target, path string, cmd []string) []corruptCase {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int(st.Size())
	name := filepath.Base(path)
	var cases []corruptCase
	for _, d := range []damage{flip(5), flip(30), flip(size / 2), zero(size/2, 16)} {
		cases = append(cases, corruptCase{target: target, file: name, d: d, cmd: cmd})
	}
	// Damage in the last chunk (the WAL's end-of-log trailer, the
	// manifest's last edit), or a cut, reads as a torn tail: no later
	// chunk proves it had been synced. The manifest's last edit is the
	// one that records the WAL's seal at Close, so losing it leaves the
	// state a crash during Close leaves: "sieve check" passes, and
	// says the manifest ends torn.
	tornTail := []damage{flip(size - 3), truncate(size / 2)}
	if target == "WAL" {
		tornTail = append(tornTail, truncate(0), truncate(20))
	} else {
		// A manifest without a whole first edit is no manifest.
		for _, n := range []int{0, 20} {
			cases = append(cases, corruptCase{target: target, file: name, d: truncate(n), cmd: cmd})
		}
	}
	for _, d := range tornTail {
		cases = append(cases, corruptCase{target: target, file: name, d: d, cmd: cmd, torn: true,
			checkMayPass: target == "manifest" && d.name == flip(size-3).name})
	}
	return cases
}

// misplacedChunkCase copies a whole chunk of the WAL at path over the next
// one (the matrix's "misplaced block"): its checksum holds (same log), so
// the log reads as valid, but a record comes twice and sequence numbers go
// back.
func misplacedChunkCase(t *testing.T, path string) corruptCase {
	wal, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := 36 // the first record's chunk, after the file header
	n1 := 19 + int(binary.LittleEndian.Uint16(wal[first+8:]))
	if n2 := 19 + int(binary.LittleEndian.Uint16(wal[first+n1+8:])); n2 != n1 {
		t.Fatalf("first two WAL chunks differ in length (%d, %d)", n1, n2)
	}
	return corruptCase{target: "WAL", file: filepath.Base(path), cmd: []string{"wal", "dump"},
		d: damage{fmt.Sprintf("chunk at %d copied over the next", first), func(b []byte) []byte {
			b = append([]byte(nil), b...)
			copy(b[first+n1:], b[first:first+n1])
			return b
		}}}
}

func TestCorruptFiles(t *testing.T) {
	clean, _ := genDB(t)
	cases := corruptCases(t, clean)
	if len(cases) < 60 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		dir := t.TempDir()
		copyDir(t, clean, dir)
		path := filepath.Join(dir, c.file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, c.d.apply(b), 0o644); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%s %s (%s)", c.target, c.d.name, c.file)

		arg := path
		if c.file == "CURRENT" {
			arg = dir
		}
		r := sieveRunUnchanged(t, dir, append(append([]string(nil), c.cmd...), arg)...)
		t.Logf("%s: %s: exit %d: %s", what, strings.Join(c.cmd, " "), r.code, lastLine(r))
		switch {
		case c.torn && r.code == 0:
			if !strings.Contains(r.stdout, "torn tail") && !strings.Contains(r.stdout, "not closed") {
				t.Errorf("%s: %s exits 0 without reporting how the log ends:\n%s", what, c.cmd, r.stdout)
			}
		case r.code != 1:
			t.Errorf("%s: %s exits %d, want 1\nstdout:\n%s\nstderr:\n%s", what, c.cmd, r.code, r.stdout, r.stderr)
		case !clearError(r, c.file):
			t.Errorf("%s: %s: unclear error:\nstdout:\n%s\nstderr:\n%s", what, c.cmd, r.stdout, r.stderr)
		}

		r = sieveRunUnchanged(t, dir, "check", dir)
		t.Logf("%s: check: exit %d: %s", what, r.code, firstFail(r))
		if c.checkMayPass && r.code == 0 {
			if !strings.Contains(r.stdout, "torn tail") {
				t.Errorf("%s: check passes without noting the torn tail:\n%s", what, r.stdout)
			}
		} else if r.code != 1 || !strings.Contains(r.stdout, "FAIL") {
			t.Errorf("%s: check exits %d, want 1 with a FAIL line\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
		}
	}
}

func lastLine(r result) string {
	s := strings.TrimSpace(r.stderr)
	if s == "" {
		s = strings.TrimSpace(r.stdout)
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func firstFail(r result) string {
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "FAIL") {
			return strings.TrimSpace(l)
		}
	}
	return lastLine(r)
}

// clearError reports whether a failed command said what is wrong and
// where: "sieve: " and the file's name on stderr, or a DAMAGED block in a
// dump followed by the count on stderr.
func clearError(r result, file string) bool {
	return strings.HasPrefix(r.stderr, "sieve: ") && strings.Contains(r.stderr, file) &&
		strings.Count(strings.TrimSpace(r.stderr), "\n") == 0
}
