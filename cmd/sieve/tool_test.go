package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
	"github.com/sievedb/sieve/vfs"
)

// entryLine matches an entry printed by "sstable dump".
var entryLine = regexp.MustCompile(`(?m)^ {22}\S.*#\d+,(SET|DEL|MERGE) = `)

func TestSSTableCommands(t *testing.T) {
	dir, _ := genDB(t)
	ssts := filesOf(t, dir, "*.sst")
	if len(ssts) < 10 {
		t.Fatalf("only %d tables", len(ssts))
	}
	policies := map[string]bool{}
	for _, path := range ssts {
		tb, err := openTable(vfs.Default, path)
		if err != nil {
			t.Fatal(err)
		}
		p := *tb.r.Properties()
		tb.Close()
		policies[p.FilterPolicy] = true

		r := sieveRunUnchanged(t, dir, "sstable", "check", path)
		if r.code != 0 || !strings.Contains(r.stdout, ": ok: ") {
			t.Fatalf("sstable check %s: exit %d\n%s%s", path, r.code, r.stdout, r.stderr)
		}
		r = sieveRunUnchanged(t, dir, "sstable", "props", path)
		if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("sieve.num.entries              %d\n", p.NumEntries)) ||
			!strings.Contains(r.stdout, "filter: policy "+strconv.Quote(p.FilterPolicy)) {
			t.Fatalf("sstable props %s: exit %d\n%s%s", path, r.code, r.stdout, r.stderr)
		}
		r = sieveRunUnchanged(t, dir, "sstable", "dump", "-n", "0", path)
		if r.code != 0 {
			t.Fatalf("sstable dump %s: exit %d\n%s%s", path, r.code, r.stdout, r.stderr)
		}
		if n := len(entryLine.FindAllString(r.stdout, -1)); uint64(n) != p.NumEntries {
			t.Fatalf("sstable dump -n 0 %s printed %d entries, the table has %d\n%s", path, n, p.NumEntries, r.stdout)
		}
		if n := strings.Count(r.stdout, " ok "); uint64(n) < p.NumDataBlocks+4 {
			t.Fatalf("sstable dump %s: %d blocks verified, want %d data blocks + filter, properties, metaindex, index\n%s", path, n, p.NumDataBlocks, r.stdout)
		}
		r = sieveRunUnchanged(t, dir, "sstable", "dump", "-n", "3", path)
		if n := len(entryLine.FindAllString(r.stdout, -1)); n != min(3, int(p.NumEntries)) || r.code != 0 {
			t.Fatalf("sstable dump -n 3 printed %d entries (exit %d)\n%s", n, r.code, r.stdout)
		}
		r = sieveRunUnchanged(t, dir, "sstable", "dump", "-blocks", path)
		if n := len(entryLine.FindAllString(r.stdout, -1)); n != 0 || r.code != 0 {
			t.Fatalf("sstable dump -blocks printed %d entries (exit %d)", n, r.code)
		}
	}
	for _, p := range []string{"sieve.bloom.blocked/10", "sieve.bloom.standard/10", "sieve.cuckoo/12"} {
		if !policies[p] {
			t.Errorf("no table with filter policy %s: %v", p, policies)
		}
	}
}

func TestWALDump(t *testing.T) {
	dir, _ := genDB(t)
	logs := filesOf(t, dir, "*.log")
	if len(logs) != 1 {
		t.Fatalf("want one WAL, have %v", logs)
	}
	r := sieveRunUnchanged(t, dir, "wal", "dump", "-n", "0", logs[0])
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// buildDB leaves 50 puts, a delete and a merge in the WAL.
	for _, want := range []string{
		"52 records, 52 batches, 52 entries",
		"SET wal0000 = unflushed\n", "SET wal0049 = unflushed\n",
		"DEL user000001\n", "MERGE cf=1 page/000 = 5\n",
		"end: clean end",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("wal dump lacks %q:\n%s", want, r.stdout)
		}
	}
	r = sieveRunUnchanged(t, dir, "wal", "dump", "-n", "2", logs[0])
	if got := strings.Count(r.stdout, " = unflushed"); got != 2 || !strings.Contains(r.stdout, "(2 of 52 entries printed") {
		t.Errorf("wal dump -n 2 printed %d entries:\n%s", got, r.stdout)
	}
}

func TestManifestDump(t *testing.T) {
	dir, _ := genDB(t)
	mans := filesOf(t, dir, "MANIFEST-*")
	for _, arg := range []string{mans[len(mans)-1], dir} {
		r := sieveRunUnchanged(t, dir, "manifest", "dump", arg)
		if r.code != 0 {
			t.Fatalf("manifest dump %s: exit %d\n%s%s", arg, r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"edit 0 at offset 36", "add-cf 1 counters merger=test.add", "add-cf 2 cuckoo", "sealed-log",
			"resulting version:", "cf 1 counters, merger test.add:", "L6:"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("manifest dump lacks %q:\n%s", want, r.stdout)
			}
		}
		// The resulting version names exactly the tables in the directory
		// (a clean close leaves no obsolete table behind).
		res := r.stdout[strings.Index(r.stdout, "resulting version:"):]
		named := regexp.MustCompile(`(?m)^ {6}(\d{6}) `).FindAllStringSubmatch(res, -1)
		if len(named) != len(filesOf(t, dir, "*.sst")) {
			t.Errorf("resulting version names %d tables, the directory holds %d:\n%s", len(named), len(filesOf(t, dir, "*.sst")), res)
		}
		for _, m := range named {
			if _, err := os.Stat(filepath.Join(dir, m[1]+".sst")); err != nil {
				t.Errorf("resulting version names %s: %v", m[1], err)
			}
		}
	}
	r := sieveRunUnchanged(t, dir, "manifest", "dump", "-n", "2", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "edit 1 at") || strings.Contains(r.stdout, "edit 2 at") || !strings.Contains(r.stdout, "(2 of ") {
		t.Errorf("manifest dump -n 2: exit %d\n%s", r.code, r.stdout)
	}
	r = sieveRunUnchanged(t, dir, "manifest", "dump", "-edits=false", dir)
	if r.code != 0 || strings.Contains(r.stdout, "edit 0 at") || !strings.Contains(r.stdout, "resulting version:") {
		t.Errorf("manifest dump -edits=false: exit %d\n%s", r.code, r.stdout)
	}
}

func TestLSM(t *testing.T) {
	dir, _ := genDB(t)
	r := sieveRunUnchanged(t, dir, "lsm", "-tables", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"cf 0 default, filter sieve.bloom.blocked/10", "cf 1 counters, filter sieve.bloom.standard/10, merger test.add",
		"cf 2 cuckoo, filter sieve.cuckoo/12", "\n  L0 ", "\n  L6 ", "\n  total "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("lsm lacks %q:\n%s", want, r.stdout)
		}
	}
	// The default family spans at least three levels, and its measured FPR
	// is near the 10 bits/key Bloom filter's ~0.7%.
	def := r.stdout[strings.Index(r.stdout, "cf 0 default"):strings.Index(r.stdout, "cf 1 counters")]
	if n := len(regexp.MustCompile(`(?m)^  L\d `).FindAllString(def, -1)); n < 3 {
		t.Errorf("default family has %d levels, want >= 3:\n%s", n, def)
	}
	m := regexp.MustCompile(`(?m)^  total .* (\d+\.\d+)% \(expected (\d+\.\d+)%\) of (\d+)`).FindStringSubmatch(def)
	if m == nil {
		t.Fatalf("no FPR in the total row:\n%s", def)
	}
	fpr, _ := strconv.ParseFloat(m[1], 64)
	if fpr <= 0 || fpr > 2 {
		t.Errorf("measured FPR %v%%, want about 0.7%%", fpr)
	}
	if n := len(regexp.MustCompile(`(?m)^ {8}\d{6} `).FindAllString(r.stdout, -1)); n != len(filesOf(t, dir, "*.sst")) {
		t.Errorf("lsm -tables lists %d tables, the directory holds %d", n, len(filesOf(t, dir, "*.sst")))
	}
	if r := sieveRunUnchanged(t, dir, "lsm", "-probes", "0", dir); r.code != 0 || strings.Contains(r.stdout, "expected") {
		t.Errorf("lsm -probes 0: exit %d\n%s", r.code, r.stdout)
	}

	r = sieveRunUnchanged(t, dir, "lsm", "-format", "svg", dir)
	if r.code != 0 {
		t.Fatalf("svg: exit %d\n%s", r.code, r.stderr)
	}
	rects := 0
	d := xml.NewDecoder(strings.NewReader(r.stdout))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v\n%s", err, r.stdout)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if want := len(filesOf(t, dir, "*.sst")) + 1; rects != want {
		t.Errorf("svg has %d rects, want one per table and the background (%d)", rects, want)
	}
	r = sieveRunUnchanged(t, dir, "lsm", "-format", "html", dir)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.Contains(r.stdout, "<svg ") ||
		!strings.Contains(r.stdout, "cf 2 cuckoo") || !strings.HasSuffix(r.stdout, "</html>\n") {
		t.Errorf("html: exit %d\n%s", r.code, r.stdout)
	}
}

func TestCheck(t *testing.T) {
	dir, live := genDB(t)
	r := sieveRunUnchanged(t, dir, "check", "-v", dir)
	if r.code != 0 || !strings.HasSuffix(r.stdout, dir+": ok\n") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"level invariants: ok", "invariants: ok",
		fmt.Sprintf("cf 0 default: %d live keys read", live),
		"cf 1 counters: 500 live keys read",
		fmt.Sprintf("%d tables in 3 column families", len(filesOf(t, dir, "*.sst"))),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "FAIL") || strings.Contains(r.stdout, "another process") {
		t.Errorf("unexpected:\n%s", r.stdout)
	}
}

// A table the manifest does not name (left by a crash) is noted; a table
// it names that is missing fails the check.
func TestCheckDirectoryAgainstManifest(t *testing.T) {
	dir, _ := genDB(t)
	ssts := filesOf(t, dir, "*.sst")
	b, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "999999.sst"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := sieveRunUnchanged(t, dir, "check", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "note: 999999.sst is not in the current version") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
	if err := os.Remove(ssts[len(ssts)-1]); err != nil {
		t.Fatal(err)
	}
	r = sieveRunUnchanged(t, dir, "check", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL: "+filepath.Base(ssts[len(ssts)-1])) || !strings.Contains(r.stdout, "missing from the directory") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
	if r := sieveRunUnchanged(t, dir, "lsm", dir); r.code != 1 || !strings.Contains(r.stdout, "ERROR") {
		t.Errorf("lsm with a missing table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Keys and values are printed without control bytes or non-ASCII, and
// -keys selects hex or quoted forms.
func TestSafeOutput(t *testing.T) {
	dir, _ := genDB(t)
	var outs []string
	for _, p := range filesOf(t, dir, "*.sst") {
		outs = append(outs, sieveRun(t, "sstable", "dump", "-n", "0", "-v", "0", p).stdout, sieveRun(t, "sstable", "props", p).stdout)
	}
	logs := filesOf(t, dir, "*.log")
	outs = append(outs, sieveRun(t, "wal", "dump", "-n", "0", logs[0]).stdout,
		sieveRun(t, "manifest", "dump", dir).stdout, sieveRun(t, "lsm", "-tables", dir).stdout, sieveRun(t, "check", dir).stdout)
	sawBinary := false
	for _, out := range outs {
		for i := 0; i < len(out); i++ {
			if c := out[i]; (c < ' ' && c != '\n') || c >= 0x7f {
				t.Fatalf("output byte %#x at %d:\n%s", c, i, out[max(0, i-200):min(len(out), i+200)])
			}
		}
		sawBinary = sawBinary || strings.Contains(out, `"\x00\xff\x00\x00\n\x1b"`)
	}
	if !sawBinary {
		t.Error("the binary keys buildDB writes are not printed quoted")
	}
	r := sieveRun(t, "wal", "dump", "-keys", "hex", logs[0])
	if !strings.Contains(r.stdout, "SET 0x77616c30303030 = 0x756e666c7573686564") {
		t.Errorf("-keys hex:\n%s", r.stdout)
	}
	r = sieveRun(t, "wal", "dump", "-keys", "quote", "-v", "4", logs[0])
	if !strings.Contains(r.stdout, `SET "wal0000" = "unfl"...(9 bytes)`) {
		t.Errorf("-keys quote -v 4:\n%s", r.stdout)
	}
}

func TestByteFmt(t *testing.T) {
	for _, c := range []struct {
		mode, in, want string
	}{
		{"text", "abc", "abc"},
		{"text", "", `""`},
		{"text", "a b", `"a b"`},
		{"text", "k#1", `"k#1"`},
		{"text", "caf\xc3\xa9-au-lait", `"caf\xc3\xa9-au-lait"`},
		{"text", "caf\xc3\xa9", `"caf\xc3\xa9"`},
		{"text", "\x00\x01\x02x", `"\x00\x01\x02x"`},
		{"text", "\xde\xad\xbe\xef", `"\xde\xad\xbe\xef"`}, // not "\u07ad\xbe\xef"
		{"text", "line\n", `"line\n"`},
		{"text", "\x1b[31mred", `"\x1b[31mred"`},
		{"text", `q"\`, `"q\"\\"`},
		{"hex", "abc", "0x616263"},
		{"quote", "abc", `"abc"`},
		{"base64", "\x00\xff", "AP8="},
	} {
		b := byteFmt{mode: c.mode}
		if got := b.key([]byte(c.in)); got != c.want {
			t.Errorf("%s %q: got %s, want %s", c.mode, c.in, got, c.want)
		}
	}
	b := byteFmt{mode: "text", max: 3}
	if got := b.value([]byte("abcdef")); got != "abc...(6 bytes)" {
		t.Errorf("cut value: %s", got)
	}
}

func TestUsage(t *testing.T) {
	dir, _ := genDB(t)
	sst := filesOf(t, dir, "*.sst")[0]
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no command"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"sstable"}, 2, "want dump, check or props"},
		{[]string{"sstable", "dump"}, 2, "want one argument, got 0"},
		{[]string{"sstable", "dump", sst, sst}, 2, "want one argument, got 2"},
		{[]string{"sstable", "dump", "-keys", "octal", sst}, 2, "-keys=octal"},
		{[]string{"sstable", "dump", "-bogus", sst}, 2, "flag provided but not defined"},
		{[]string{"lsm", "-format", "png", dir}, 2, "-format=png"},
		{[]string{"wal"}, 2, "want dump"},
		{[]string{"sstable", "check", filepath.Join(dir, "nope.sst")}, 1, "no such file"},
		{[]string{"check", filepath.Join(dir, "nope")}, 1, "no such file"},
		{[]string{"lsm", t.TempDir()}, 1, "CURRENT"},
		{[]string{"wal", "dump", filepath.Join(dir, "CURRENT")}, 0, "torn tail"},
		{[]string{"sstable", "check", filepath.Join(dir, "CURRENT")}, 1, "corruption"},
		{[]string{"help"}, 0, "usage:"},
		{[]string{"sstable", "dump", "-h"}, 0, "-keys"},
	} {
		r := sieveRunUnchanged(t, dir, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("sieve %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), r.code, c.code, c.want, r.stdout, r.stderr)
		}
	}
}

// The file system the tool reads through refuses every change, and taking
// the lock of a directory without a LOCK file does not create one.
func TestROFSRefusesChanges(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := newROFS()
	f, err := fs.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.Write([]byte("x"))
	for name, err := range map[string]error{
		"write": werr, "sync": f.Sync(), "truncate": f.Truncate(0),
		"remove": fs.Remove(p), "rename": fs.Rename(p, p+"2"), "mkdir": fs.MkdirAll(filepath.Join(dir, "d"), 0o755),
		"syncdir": fs.SyncDir(dir),
	} {
		if !errors.Is(err, errReadOnly) {
			t.Errorf("%s: %v, want errReadOnly", name, err)
		}
	}
	f.Close()
	if _, err := fs.Create(filepath.Join(dir, "g")); !errors.Is(err, errReadOnly) {
		t.Errorf("create: %v", err)
	}
	if _, err := fs.OpenReadWrite(p); !errors.Is(err, errReadOnly) {
		t.Errorf("open read-write: %v", err)
	}
	l, err := fs.Lock(filepath.Join(dir, "LOCK"))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lock created LOCK: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "data" {
		t.Errorf("file changed: %q", b)
	}
}

// While a writer holds the database open, the tool reads it without the
// lock and says so.
func TestOpenElsewhere(t *testing.T) {
	dir, _ := genDB(t)
	db := openIdle(t, dir)
	defer db.Close()
	if err := db.Put([]byte("while-open"), []byte("1"), sieve.Sync); err != nil {
		t.Fatal(err)
	}
	r := sieveRun(t, "check", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "note: the database is open in another process") {
		t.Errorf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sieveRun(t, "lsm", dir); r.code != 0 {
		t.Errorf("lsm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	logs := filesOf(t, dir, "*.log")
	if r := sieveRun(t, "wal", "dump", logs[len(logs)-1]); r.code != 0 || !strings.Contains(r.stdout, "SET while-open = 1") ||
		!strings.Contains(r.stdout, "not closed") {
		t.Errorf("wal dump of the live WAL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The built binary: exit statuses, and a database held open by another
// process (this test process holds the lock).
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary with")
	}
	bin := filepath.Join(t.TempDir(), "sieve")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir, _ := genDB(t)
	runBin := func(args ...string) (int, string) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	before := dirSums(t, dir)
	if code, out := runBin("check", dir); code != 0 || strings.Contains(out, "another process") {
		t.Errorf("check: exit %d\n%s", code, out)
	}
	if d := diffSums(before, dirSums(t, dir)); d != "" {
		t.Errorf("check changed the directory: %s", d)
	}
	if code, out := runBin(); code != 2 || !strings.Contains(out, "usage:") {
		t.Errorf("no arguments: exit %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "000001.sst")
	os.WriteFile(bad, []byte("not a table, not a table, not a table, not a table"), 0o644)
	if code, out := runBin("sstable", "check", bad); code != 1 || !strings.HasPrefix(out, "sieve: ") {
		t.Errorf("bad table: exit %d\n%s", code, out)
	}

	db := openIdle(t, dir)
	defer db.Close()
	if code, out := runBin("check", dir); code != 0 || !strings.Contains(out, "open in another process") {
		t.Errorf("check while open elsewhere: exit %d\n%s", code, out)
	}
}

// openIdle opens the database read-write as another writer would and
// compacts it so that no compaction is due, so that the files stay
// put while the tool reads them. (A writer that compacts meanwhile may
// delete a table the tool is about to read: the tool reports that, and
// says the database was open elsewhere.)
func openIdle(t *testing.T, dir string) *sieve.DB {
	t.Helper()
	o := genOptions()
	o.L0CompactionTrigger, o.L0StopWritesTrigger = 1000, 1000
	db, err := sieve.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	// A full manual compaction of each family leaves no level over its
	// target. ("counters" is not compacted: its merger is not supplied.)
	cuckoo, err := db.OpenColumnFamily("cuckoo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cuckoo.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		word string
		want string
	}{{1, "batch", "1 batch"}, {2, "batch", "2 batches"}, {0, "entry", "0 entries"}, {3, "column family", "3 column families"}, {2, "table", "2 tables"}} {
		if got := count(c.n, c.word); got != c.want {
			t.Errorf("count(%d, %q) = %q, want %q", c.n, c.word, got, c.want)
		}
	}
}

// dirSums, on which every "the directory is unchanged" check rests, sees a
// change of content (same size), of mtime alone, and a new file.
func TestDirSumsSeeChanges(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("abc"), 0o644)
	before := dirSums(t, dir)
	os.WriteFile(p, []byte("abd"), 0o644)
	if diffSums(before, dirSums(t, dir)) == "" {
		t.Error("content change not seen")
	}
	before = dirSums(t, dir)
	st, _ := os.Stat(p)
	os.Chtimes(p, st.ModTime(), st.ModTime().Add(time.Second))
	if diffSums(before, dirSums(t, dir)) == "" {
		t.Error("mtime change not seen")
	}
	before = dirSums(t, dir)
	os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644)
	if d := diffSums(before, dirSums(t, dir)); d != "created LOCK" {
		t.Errorf("new file: %q", d)
	}
}

// A database with the sketch column family, whose merger the tool does not
// link: check walks it with a stand-in merger of the recorded name.
func TestSketchFamily(t *testing.T) {
	dir := t.TempDir()
	db, err := sieve.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sketchcol.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := st.PFAddBlind(fmt.Appendf(nil, "hll%d", i%10), fmt.Appendf(nil, "e%d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.BFAdd(fmt.Appendf(nil, "bf%d", i%5), fmt.Appendf(nil, "x%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	st.PFAddBlind([]byte("hll0"), []byte("late")) // an operand over a flushed value, in the WAL
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r := sieveRunUnchanged(t, dir, "check", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "cf 1 sketch: 15 live keys read") {
		t.Errorf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = sieveRunUnchanged(t, dir, "lsm", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "cf 1 sketch, filter sieve.bloom.blocked/10, merger "+sketchcol.MergerName) {
		t.Errorf("lsm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = sieveRunUnchanged(t, dir, "wal", "dump", filesOf(t, dir, "*.log")[0])
	if r.code != 0 || !strings.Contains(r.stdout, "MERGE cf=1 hll0 = ") {
		t.Errorf("wal dump: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// While a writer flushes and compacts, every command gives a result or an
// error (a table deleted under it), never a panic or another exit status.
func TestWhileWriting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a writer for a second")
	}
	dir := t.TempDir()
	db, err := sieve.Open(dir, genOptions())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		val := make([]byte, 100)
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := db.Put(fmt.Appendf(nil, "k%06d", (i*7919)%50000), val, nil); err != nil {
				done <- err
				return
			}
		}
	}()
	deadline := time.Now().Add(time.Second)
	runs := 0
	for time.Now().Before(deadline) || runs < 4 {
		var args []string
		switch runs % 4 {
		case 0:
			args = []string{"check", dir}
		case 1:
			args = []string{"lsm", "-probes", "10", dir}
		case 2:
			args = []string{"manifest", "dump", "-n", "1", dir}
		case 3:
			logs := filesOf(t, dir, "*.log")
			if len(logs) == 0 {
				runs++
				continue
			}
			args = []string{"wal", "dump", "-n", "1", logs[len(logs)-1]}
		}
		r := sieveRun(t, args...)
		if r.code != 0 && r.code != 1 {
			t.Errorf("sieve %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		runs++
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if r := sieveRunUnchanged(t, dir, "check", dir); r.code != 0 {
		t.Errorf("check after the writer closed: exit %d\n%s", r.code, r.stdout)
	}
}
