package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/filter"
)

// addMerger is a counter: operands and values are decimal integers.
type addMerger struct{}

func (addMerger) Name() string { return "test.add" }
func (addMerger) FullMerge(key, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	var n int64
	if hasBase {
		v, err := strconv.ParseInt(string(base), 10, 64)
		if err != nil {
			return nil, err
		}
		n = v
	}
	for _, op := range ops {
		v, err := strconv.ParseInt(string(op), 10, 64)
		if err != nil {
			return nil, err
		}
		n += v
	}
	return strconv.AppendInt(nil, n, 10), nil
}
func (m addMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	v, err := m.FullMerge(key, nil, false, ops)
	return v, err == nil
}

// genOptions are small sizes so that a few megabytes make several levels.
func genOptions() *sieve.Options {
	return &sieve.Options{
		MemTableSize:        64 << 10,
		TargetFileSize:      16 << 10,
		LBaseMaxBytes:       64 << 10,
		LevelMultiplier:     4,
		L0CompactionTrigger: 4,
		FilterPolicy:        filter.Bloom(10),
		MaxSubcompactions:   1,
	}
}

// buildDB writes a database through the public API: the default family
// (blocked Bloom) with sets, overwrites, deletes and binary keys over
// several levels; a family "counters" with a merger and standard Bloom
// filters; a family "cuckoo" with cuckoo filters; and writes left in the
// WAL. The newest table of the default family is in L0. It closes the
// database and returns the number of live keys of the default family.
func buildDB(t testing.TB, dir string) int {
	t.Helper()
	db, counters, cuckoo := openGenDB(t, dir, genOptions())
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[string]bool{}
	for round := range 3 {
		writeRound(t, db, counters, cuckoo, rng, live, round)
	}
	// Reopen with no L0 compaction, so that the table the last flush
	// writes stays in L0 whatever background compaction did before.
	must(t, db.Close())
	o := genOptions()
	o.L0CompactionTrigger, o.L0StopWritesTrigger = 1000, 1000
	db, counters, _ = openGenDB(t, dir, o)
	writeLastFlush(t, db, rng, live)
	writeUnflushed(t, db, counters, live)
	must(t, db.Close())
	return len(live)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openGenDB opens the database in dir with o, and its families "counters"
// and "cuckoo".
func openGenDB(t testing.TB, dir string, o *sieve.Options) (db *sieve.DB, counters, cuckoo *sieve.ColumnFamily) {
	t.Helper()
	db, err := sieve.Open(dir, o)
	must(t, err)
	counters, err = db.OpenColumnFamily("counters", &sieve.ColumnFamilyOptions{Merger: addMerger{}, FilterPolicy: filter.StandardBloom(10)})
	must(t, err)
	cuckoo, err = db.OpenColumnFamily("cuckoo", &sieve.ColumnFamilyOptions{FilterPolicy: filter.Cuckoo(12)})
	must(t, err)
	return db, counters, cuckoo
}

// writeRound writes one round of buildDB's bulk: sets, overwrites and
// deletes in the default family, merges in "counters", sets in "cuckoo",
// and a batch of binary keys; then it flushes, and after the first round
// compacts everything.
func writeRound(t testing.TB, db *sieve.DB, counters, cuckoo *sieve.ColumnFamily, rng *rand.Rand, live map[string]bool, round int) {
	t.Helper()
	val := make([]byte, 100)
	for i := range 6000 {
		k := fmt.Appendf(nil, "user%06d", rng.IntN(12000))
		for j := range val {
			val[j] = 'a' + byte((i+j)%26)
		}
		must(t, db.Put(k, val[:20+rng.IntN(80)], nil))
		live[string(k)] = true
		if i%7 == 0 {
			d := fmt.Appendf(nil, "user%06d", rng.IntN(12000))
			must(t, db.Delete(d, nil))
			delete(live, string(d))
		}
		if i%3 == 0 {
			must(t, counters.Merge(fmt.Appendf(nil, "page/%03d", rng.IntN(500)), []byte("1"), nil))
		}
		if i%2 == 0 {
			must(t, cuckoo.Put(fmt.Appendf(nil, "c%05d", rng.IntN(5000)), []byte("v"), nil))
		}
	}
	// Keys no terminal should see raw.
	b := db.NewBatch()
	for i := range 4 {
		k := []byte{0, 0xff, byte(round), byte(i), '\n', 0x1b}
		b.Put(k, []byte{0xde, 0xad, 0xbe, 0xef})
		live[string(k)] = true
	}
	must(t, db.Apply(b, nil))
	must(t, db.Flush())
	if round == 0 {
		must(t, db.Compact(nil, nil))
	}
}

// writeLastFlush writes the sets and deletes of the table the last flush
// writes (the newest table of the default family, in L0).
func writeLastFlush(t testing.TB, db *sieve.DB, rng *rand.Rand, live map[string]bool) {
	t.Helper()
	for i := range 40 {
		k := fmt.Appendf(nil, "user%06d", rng.IntN(12000))
		if i%10 == 0 {
			must(t, db.Delete(k, nil))
			delete(live, string(k))
			continue
		}
		must(t, db.Put(k, []byte("last flush"), nil))
		live[string(k)] = true
	}
	must(t, db.Flush())
}

// writeUnflushed writes what stays in the WAL: sets, a delete and a merge.
func writeUnflushed(t testing.TB, db *sieve.DB, counters *sieve.ColumnFamily, live map[string]bool) {
	t.Helper()
	for i := range 50 {
		k := fmt.Appendf(nil, "wal%04d", i)
		must(t, db.Put(k, []byte("unflushed"), nil))
		live[string(k)] = true
	}
	must(t, db.Delete([]byte("user000001"), nil))
	delete(live, "user000001")
	must(t, counters.Merge([]byte("page/000"), []byte("5"), nil))
}

var sharedDB struct {
	dir  string
	live int
}

// genDB returns a directory holding a copy of the database buildDB
// writes (built once per test binary).
func genDB(t testing.TB) (string, int) {
	t.Helper()
	if sharedDB.dir == "" {
		dir, err := os.MkdirTemp("", "sieve-tool-test-")
		if err != nil {
			t.Fatal(err)
		}
		sharedDB.live = buildDB(t, dir)
		sharedDB.dir = dir
	}
	dst := t.TempDir()
	copyDir(t, sharedDB.dir, dst)
	return dst, sharedDB.live
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDB.dir != "" {
		os.RemoveAll(sharedDB.dir)
	}
	os.Exit(code)
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dirSums returns the name, size, mode, mtime and SHA-256 of every file in
// dir: the state a command must leave unchanged.
func dirSums(t testing.TB, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d %v %v %x", st.Size(), st.Mode(), st.ModTime().UnixNano(), sha256.Sum256(b))
	}
	return out
}

func diffSums(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "removed "+k)
		} else if v != w {
			out = append(out, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

type result struct {
	code           int
	stdout, stderr string
}

// sieveRun runs the tool in-process and fails the test on a panic.
func sieveRun(t testing.TB, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	r := result{code, out.String(), errb.String()}
	if strings.Contains(r.stderr, "panic") {
		t.Fatalf("sieve %s panicked:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// sieveRunUnchanged runs the tool and checks that dir is unchanged.
func sieveRunUnchanged(t testing.TB, dir string, args ...string) result {
	t.Helper()
	before := dirSums(t, dir)
	r := sieveRun(t, args...)
	if d := diffSums(before, dirSums(t, dir)); d != "" {
		t.Fatalf("sieve %s changed the directory: %s", strings.Join(args, " "), d)
	}
	return r
}

// filesOf returns the paths of the files in dir whose names end with suffix
// (or start with it, for "MANIFEST-").
func filesOf(t testing.TB, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}
