package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
)

// farDeadline is the deadline of the expiring keys the tests write: fixed,
// so that the README's samples do not change from run to run.
var farDeadline = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// buildSketchDB writes a database with the sketch family holding one key
// of each kind (HyperLogLog, Bloom, cuckoo, Count-Min, Top-K, a bitmap as
// a paged string, a string), an HLL and a default-family key with a
// deadline, and one that has expired. Part is flushed, part left in the
// WAL.
func buildSketchDB(t testing.TB, dir string) {
	t.Helper()
	db, err := sieve.Open(dir, nil)
	must(t, err)
	st, err := sketchcol.Open(db)
	must(t, err)
	for i := range 1000 {
		must(t, st.PFAddBlind([]byte("hll"), fmt.Appendf(nil, "e%d", i)))
	}
	for i := range 100 {
		_, err := st.BFAdd([]byte("bloom"), fmt.Appendf(nil, "x%d", i))
		must(t, err)
	}
	for i := range 50 {
		_, err := st.CFAdd([]byte("cuckoo"), fmt.Appendf(nil, "y%d", i))
		must(t, err)
	}
	must(t, st.CMSInitByDim([]byte("cms"), 100, 5))
	_, err = st.CMSIncrBy([]byte("cms"), [][]byte{[]byte("a"), []byte("b")}, []int64{3, 4})
	must(t, err)
	must(t, st.TopKReserve([]byte("topk"), 3, 8, 7, 0.9))
	_, err = st.TopKAdd([]byte("topk"), []byte("a"), []byte("a"), []byte("a"), []byte("b"), []byte("b"), []byte("c"))
	must(t, err)
	must(t, db.Flush())
	// A bitmap: a paged string's header and one page (9 bits set).
	must(t, st.ColumnFamily().Put([]byte("bitmap"), sketchcol.AppendStrHeader(nil, 2, 1), nil))
	must(t, st.PagesColumnFamily().Put(sketchcol.StrPageKey(nil, []byte("bitmap"), 0), sketchcol.AppendStrPage(nil, []byte{0xff, 0x01}), nil))
	must(t, st.ColumnFamily().Put([]byte("string"), []byte("\x00hello"), nil))
	hll, err := st.ColumnFamily().Get([]byte("hll"))
	must(t, err)
	must(t, st.ColumnFamily().PutWithExpiry([]byte("hll-ttl"), hll, farDeadline, nil))
	must(t, db.PutWithExpiry([]byte("session"), []byte("token"), farDeadline, nil))
	must(t, db.PutWithExpiry([]byte("gone"), []byte("x"), time.Unix(1, 0), nil))
	must(t, db.Put([]byte("plain"), []byte("value"), nil))
	must(t, st.PFAddBlind([]byte("hll"), []byte("late"))) // an operand in the WAL over a flushed value
	must(t, db.Close())
}

func TestGetScanDefault(t *testing.T) {
	dir, live := genDB(t)
	r := sieveRunUnchanged(t, dir, "scan", dir)
	if r.code != 0 || strings.Count(r.stdout, "\n") != live {
		t.Fatalf("scan: exit %d, %d lines, want %d\n%s", r.code, strings.Count(r.stdout, "\n"), live, r.stderr)
	}
	assertSorted(t, r.stdout)
	for _, c := range []struct {
		args []string
		want string
		n    int
	}{
		{[]string{"-limit", "3"}, `"\x00\xff\x00\x00\n\x1b" = "\xde\xad\xbe\xef"` + "\n", 3},
		{[]string{"-prefix", "wal00"}, "wal0000 = unflushed\n", 50},
		{[]string{"-start", "wal0010", "-end", "wal0020"}, "wal0010 = unflushed\n", 10},
		{[]string{"-start", "wal0045", "-prefix", "wal"}, "wal0049 = unflushed\n", 5},
		{[]string{"-keys", "hex", "-prefix", "0x00ff01"}, `0x00ff01000a1b = "\xde\xad\xbe\xef"` + "\n", 4},
		{[]string{"-format", "hex", "-prefix", "0x77616c30303030"}, "0x77616c30303030 = 0x756e666c7573686564\n", 1},
		{[]string{"-format", "base64", "-prefix", "AP8C"}, "AP8CAAob = 3q2+7w==\n", 4},
		{[]string{"-format", "quote", "-prefix", "wal0001"}, `"wal0001" = "unflushed"` + "\n", 1},
		{[]string{"-prefix", `"\x00\xff\x02"`}, `"\x00\xff\x02\x03\n\x1b" = "\xde\xad\xbe\xef"` + "\n", 4},
		{[]string{"-v", "3", "-prefix", "wal0002"}, "wal0002 = unf...(9 bytes)\n", 1},
	} {
		args := append(append([]string{"scan"}, c.args...), dir)
		r := sieveRunUnchanged(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) || strings.Count(r.stdout, "\n") != c.n {
			t.Errorf("sieve %s: exit %d, want %d lines with %q\n%s%s", strings.Join(args, " "), r.code, c.n, c.want, r.stdout, r.stderr)
		}
	}
	if r := sieveRun(t, "scan", "-limit", "3", dir); !strings.Contains(r.stderr, "stopped at -limit 3") {
		t.Errorf("scan -limit: %q", r.stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", dir, "wal0007"}, 0, "unflushed\n"},
		{[]string{"get", "-keys", "hex", dir, "00ff00000a1b"}, 0, `"\xde\xad\xbe\xef"` + "\n"},
		{[]string{"get", "-format", "hex", dir, "0x00ff00000a1b"}, 0, "0xdeadbeef\n"},
		{[]string{"get", "-format", "base64", dir, "AP8AAAob"}, 0, "3q2+7w==\n"},
		{[]string{"get", dir, `"\x00\xff\x00\x00\n\x1b"`}, 0, `"\xde\xad\xbe\xef"` + "\n"},
		{[]string{"get", dir, "user000001"}, 1, "sieve: user000001: not found in column family default\n"},
		{[]string{"get", "-keys", "hex", dir, "zz"}, 2, "not hex"},
		{[]string{"get", dir}, 2, "want 2 arguments, got 1"},
		{[]string{"scan", "-format", "octal", dir}, 2, "-format=octal"},
		{[]string{"scan", "-cf", "nope", dir}, 1, "no column family nope (it has counters, cuckoo, default)"},
		{[]string{"scan", t.TempDir()}, 1, "no sieve database here"},
		{[]string{"scan", "-h"}, 0, "-prefix"},
		{[]string{"get", "-h"}, 0, "usage: sieve get [flags] DIR KEY"},
	} {
		r := sieveRunUnchanged(t, dir, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("sieve %s: exit %d, want %d with %q\n%s%s", strings.Join(c.args, " "), r.code, c.code, c.want, r.stdout, r.stderr)
		}
	}
}

// assertSorted checks that the keys of scan's output lines (in -keys text
// form) are in strictly increasing byte order.
func assertSorted(t *testing.T, out string) {
	t.Helper()
	var prev []byte
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, err := parseArg("text", line[:strings.Index(line, " = ")])
		if err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		if i > 0 && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("line %d: %q after %q", i, k, prev)
		}
		prev = k
	}
}

// Every key scan prints can be read back by get in each -keys form, and
// render and parseArg are inverses.
func TestKeyFormsRoundTrip(t *testing.T) {
	dir, _ := genDB(t)
	for _, mode := range []string{"text", "quote", "hex", "base64"} {
		r := sieveRun(t, "scan", "-keys", mode, "-limit", "6", dir)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if r.code != 0 || len(lines) != 6 {
			t.Fatalf("-keys %s: exit %d\n%s", mode, r.code, r.stdout)
		}
		for _, line := range lines {
			k := line[:strings.Index(line, " = ")]
			if g := sieveRun(t, "get", "-keys", mode, dir, k); g.code != 0 || g.stdout != `"\xde\xad\xbe\xef"`+"\n" {
				t.Errorf("get -keys %s %s: exit %d %q %q", mode, k, g.code, g.stdout, g.stderr)
			}
		}
	}
	for _, s := range []string{"", "abc", "a b", "\x00\xff", "caf\xc3\xa9", `q"\`, "\xde\xad\xbe\xef", "\n\r\t"} {
		for _, mode := range []string{"text", "quote", "hex", "base64"} {
			if got, err := parseArg(mode, render(mode, []byte(s))); err != nil || string(got) != s {
				t.Errorf("%s %q: rendered %s, read back %q (%v)", mode, s, render(mode, []byte(s)), got, err)
			}
		}
	}
}

// Other families: a merger the tool lacks shows a key's base and operands
// unmerged; a family without a merger prints as the default does.
func TestGetScanFamilies(t *testing.T) {
	dir, _ := genDB(t)
	r := sieveRunUnchanged(t, dir, "scan", "-cf", "counters", dir)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 500 {
		t.Fatalf("counters: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^page/000 = unmerged \(merger test\.add is not in the tool\): base \d+, operands 5$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^page/\d{3} = \d+$`).MatchString(r.stdout) {
		t.Errorf("counters:\n%s", r.stdout[:min(len(r.stdout), 600)])
	}
	g := sieveRunUnchanged(t, dir, "get", "-cf", "counters", dir, "page/000")
	if g.code != 0 || !strings.HasPrefix(g.stdout, "unmerged (merger test.add") {
		t.Errorf("get -cf counters: exit %d %q %q", g.code, g.stdout, g.stderr)
	}
	r = sieveRunUnchanged(t, dir, "scan", "-cf", "cuckoo", "-prefix", "c0000", dir)
	if r.code != 0 || !regexp.MustCompile(`^(c0000\d = v\n)+$`).MatchString(r.stdout) {
		t.Errorf("cuckoo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The sketch family: each kind decoded; -format hex shows the bytes; keys
// with a deadline show it; an expired key is absent.
func TestGetScanSketch(t *testing.T) {
	dir := t.TempDir()
	buildSketchDB(t, dir)
	r := sieveRunUnchanged(t, dir, "scan", "-cf", "sketch", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"bitmap = bitmap (paged string): 2 bytes, 9 bits set, 1 page of 4096 stored\n",
		"bloom = bloom: 100 items inserted, capacity ",
		"cms = count-min: width 100, depth 5, total count 7\n",
		"cuckoo = cuckoo: 50 items (0 deleted), ",
		"hll = hyperloglog: cardinality ",
		"hll-ttl = hyperloglog: cardinality ",
		"  (expires 2030-01-02T03:04:05Z)\n",
		"string = string, 5 bytes: hello\n",
		"topk = topk: k 3, width 8, depth 7, decay 0.9, 3 items: a=3 b=2 c=1\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("scan -cf sketch lacks %q:\n%s", want, r.stdout)
		}
	}
	m := regexp.MustCompile(`hll = hyperloglog: cardinality (\d+) \(sparse`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no HLL cardinality:\n%s", r.stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 980 || n > 1020 {
		t.Errorf("HLL of 1001 elements: cardinality %d", n)
	}
	r = sieveRunUnchanged(t, dir, "scan", "-cf", "sketch-pages", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "= string page of bitmap (sub 0x68), 2 bytes, 9 bits set\n") ||
		!strings.Contains(r.stdout, "= Bloom page of bloom (sub ") {
		t.Errorf("scan -cf sketch-pages: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "-cf", "sketch", dir, "cms"}, "count-min: width 100, depth 5, total count 7\n"},
		{[]string{"get", "-cf", "sketch", "-format", "hex", dir, "737472696e67"}, "0x0068656c6c6f\n"},
		{[]string{"get", "-cf", "sketch", "-format", "text", dir, "string"}, `"\x00hello"` + "\n"},
		{[]string{"get", dir, "session"}, "token  (expires 2030-01-02T03:04:05Z)\n"},
		{[]string{"scan", dir}, "plain = value\nsession = token  (expires 2030-01-02T03:04:05Z)\n"},
	} {
		r := sieveRunUnchanged(t, dir, c.args...)
		if r.code != 0 || !strings.HasSuffix(r.stdout, c.want) {
			t.Errorf("sieve %s: exit %d, want %q\n%s%s", strings.Join(c.args, " "), r.code, c.want, r.stdout, r.stderr)
		}
	}
	if r := sieveRunUnchanged(t, dir, "get", dir, "gone"); r.code != 1 || !strings.Contains(r.stderr, "gone: not found") {
		t.Errorf("get of an expired key: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// A view holds every file it needs: a writer that compacts everything
// (deleting every table the view reads) and closes changes nothing the
// view's iterator returns.
func TestViewOutlivesCompaction(t *testing.T) {
	dir, live := genDB(t)
	rf := readFlags{cf: "default", format: "auto"}
	must(t, rf.resolve())
	v, err := openView(dir, &rf)
	must(t, err)
	defer v.close()
	it := v.iter(nil)
	n := 0
	for ok := it.First(); ok && n < 10; ok = it.Next() {
		n++
	}
	before := filesOf(t, dir, "*.sst")
	db := openIdle(t, dir) // compacts every family but counters
	for i := range 2000 {
		must(t, db.Put(fmt.Appendf(nil, "user%06d", i), []byte("new"), nil))
	}
	must(t, db.Flush())
	must(t, db.Compact(nil, nil))
	must(t, db.Close())
	gone := 0
	for _, p := range before {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			gone++
		}
	}
	if gone == 0 {
		t.Fatal("the writer deleted no table")
	}
	for ok := it.Next(); ok; ok = it.Next() {
		if bytes.Equal(it.Value(), []byte("new")) {
			t.Fatalf("the view sees a later write at %q", it.Key())
		}
		n++
	}
	must(t, it.Close())
	if n+1 != live {
		t.Errorf("read %d keys, want %d", n+1, live)
	}
}

// While a writer in this process writes k000000, k000001, ... (synced,
// flushing and compacting), get and scan succeed and each scan shows a
// prefix of the writes with no gap, at least as long as what was written
// before it started.
func TestGetScanWhileWriting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a writer for two seconds")
	}
	dir := t.TempDir()
	db, err := sieve.Open(dir, genOptions())
	must(t, err)
	var acked atomic.Int64
	stop, done := make(chan struct{}), make(chan error)
	go writeSequential(db, &acked, stop, done)
	bin := buildBinary(t)
	deadline := time.Now().Add(2 * time.Second)
	scans := 0
	for time.Now().Before(deadline) || scans < 6 {
		floor := acked.Load()
		var out string
		if scans%2 == 1 && bin != "" {
			out = runBinary(t, bin, "scan", "-prefix", "k", dir)
		} else {
			r := sieveRun(t, "scan", "-prefix", "k", dir)
			if r.code != 0 {
				t.Fatalf("scan while writing: exit %d\n%s", r.code, r.stderr)
			}
			out = r.stdout
		}
		checkPrefixOfWrites(t, out, floor)
		if floor > 0 {
			if r := sieveRun(t, "get", dir, fmt.Sprintf("k%06d", floor-1)); r.code != 0 {
				t.Fatalf("get k%06d while writing: exit %d %s", floor-1, r.code, r.stderr)
			}
		}
		scans++
	}
	close(stop)
	must(t, <-done)
	must(t, db.Close())
	t.Logf("%d scans, %d keys written, %d tables", scans, acked.Load(), len(filesOf(t, dir, "*.sst")))
}

// writeSequential writes k000000, k000001, ... synced until stop, counting
// the writes done in acked.
func writeSequential(db *sieve.DB, acked *atomic.Int64, stop chan struct{}, done chan error) {
	val := bytes.Repeat([]byte("v"), 200)
	for i := 0; ; i++ {
		select {
		case <-stop:
			done <- nil
			return
		default:
		}
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), val, sieve.Sync); err != nil {
			done <- err
			return
		}
		acked.Store(int64(i + 1))
	}
}

// checkPrefixOfWrites checks that scan's output is k000000 .. k(n-1) with
// n >= floor.
func checkPrefixOfWrites(t *testing.T, out string, floor int64) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	if int64(len(lines)) < floor {
		t.Fatalf("scan shows %d keys, %d were written before it started", len(lines), floor)
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, fmt.Sprintf("k%06d = vvvv", i)) {
			t.Fatalf("line %d of %d: %.40q: not a prefix of the writes", i, len(lines), line)
		}
	}
}

// buildBinary builds the tool ("" when there is no go command).
func buildBinary(t *testing.T) string {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	bin := filepath.Join(t.TempDir(), "sieve")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs the built tool and fails the test unless it exits 0.
func runBinary(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) || err != nil {
		t.Fatalf("sieve %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
