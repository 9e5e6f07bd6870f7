package sieve_test

import (
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/vfs"
)

// The examples keep their databases in memory (vfs.NewMem); leave FS unset
// to use the operating system's file system.

// Open, write, read, delete.
func Example() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Put([]byte("hello"), []byte("world"), sieve.Sync); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("hello"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hello = %s\n", v)

	if err := db.Delete([]byte("hello"), sieve.Sync); err != nil {
		log.Fatal(err)
	}
	_, err = db.Get([]byte("hello"))
	fmt.Println("after delete:", errors.Is(err, sieve.ErrNotFound))
	// Output:
	// hello = world
	// after delete: true
}

// A batch applies all its writes or none, also across a crash.
func ExampleDB_Apply() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	b := db.NewBatch()
	b.Put([]byte("alice"), []byte("10"))
	b.Put([]byte("bob"), []byte("20"))
	b.Delete([]byte("carol"))
	if err := db.Apply(b, sieve.Sync); err != nil {
		log.Fatal(err)
	}
	fmt.Println(b.Len(), "writes applied")
	// Output: 3 writes applied
}

// Iterators see keys in order within optional bounds [LowerBound,
// UpperBound), forwards or backwards.
func ExampleDB_NewIter() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		db.Put([]byte(k), []byte("v"+k), nil)
	}

	it := db.NewIter(&sieve.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s=%s ", it.Key(), it.Value())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Printf("%s ", it.Key())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	// Output: b=vb c=vc c b
}

// A snapshot is a consistent view: later writes do not show through it.
func ExampleDB_NewSnapshot() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("k"), []byte("before"), nil)

	snap := db.NewSnapshot()
	defer snap.Close()
	db.Put([]byte("k"), []byte("after"), nil)

	old, _ := snap.Get([]byte("k"))
	cur, _ := db.Get([]byte("k"))
	fmt.Printf("snapshot: %s, now: %s\n", old, cur)
	// Output: snapshot: before, now: after
}

// counter is a merger that adds decimal integers: Merge writes an operand
// without reading, and reads and compaction add them up.
type counter struct{}

func (counter) Name() string { return "example.counter" }

func (counter) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	var sum int64
	if hasBase {
		n, err := strconv.ParseInt(string(base), 10, 64)
		if err != nil {
			return nil, err
		}
		sum = n
	}
	for _, op := range operands {
		n, err := strconv.ParseInt(string(op), 10, 64)
		if err != nil {
			return nil, err
		}
		sum += n
	}
	return strconv.AppendInt(nil, sum, 10), nil
}

func (c counter) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	v, err := c.FullMerge(key, nil, false, operands)
	return v, err == nil
}

// A column family with a merge operator: counting page views without a
// read-modify-write.
func ExampleDB_OpenColumnFamily() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	views, err := db.OpenColumnFamily("views", &sieve.ColumnFamilyOptions{Merger: counter{}})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		views.Merge([]byte("/index.html"), []byte("1"), nil)
	}
	views.Merge([]byte("/index.html"), []byte("10"), nil)
	v, _ := views.Get([]byte("/index.html"))
	fmt.Printf("views: %s\n", v)

	// Compaction folds the operands into one value; reads are unchanged.
	if err := views.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}
	v, _ = views.Get([]byte("/index.html"))
	fmt.Printf("after compaction: %s\n", v)
	// Output:
	// views: 13
	// after compaction: 13
}

// Each table carries a filter; the policy is chosen per database or per
// column family, and the metrics show what the filters saved.
func ExampleOptions_filterPolicy() {
	for _, p := range []filter.Policy{filter.Bloom(10), filter.StandardBloom(10), filter.Cuckoo(12)} {
		db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem(), FilterPolicy: p})
		if err != nil {
			log.Fatal(err)
		}
		for i := range 1000 {
			db.Put(fmt.Appendf(nil, "key%04d", i), []byte("v"), nil)
		}
		if err := db.Flush(); err != nil {
			log.Fatal(err)
		}
		for i := range 1000 {
			db.Get(fmt.Appendf(nil, "key%04d.absent", i)) // inside the key range, never written
		}
		m := db.Metrics()
		fmt.Printf("%s: %d filter checks, %d ruled the table out, %d false positives\n",
			p.Name(), m.Filter.Checks, m.Filter.Negatives, m.Filter.FalsePositives)
		db.Close()
	}
	// Output:
	// sieve.bloom.blocked/10: 999 filter checks, 994 ruled the table out, 5 false positives
	// sieve.bloom.standard/10: 999 filter checks, 991 ruled the table out, 8 false positives
	// sieve.cuckoo/12: 999 filter checks, 998 ruled the table out, 1 false positives
}

// With Options.Merger set, Merge writes an operand to the default family
// without reading the key; Get, iterators and compaction apply the
// operands in order.
func ExampleDB_Merge() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem(), Merger: counter{}})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.Put([]byte("hits"), []byte("100"), nil) // a base value
	db.Merge([]byte("hits"), []byte("1"), nil)
	b := db.NewBatch()
	b.Merge([]byte("hits"), []byte("2"))
	b.Merge([]byte("misses"), []byte("7")) // no base value: operands only
	if err := db.Apply(b, nil); err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"hits", "misses"} {
		v, _ := db.Get([]byte(k))
		fmt.Printf("%s = %s\n", k, v)
	}
	// Output:
	// hits = 103
	// misses = 7
}

// SeekGE finds the first key at or after a target, SeekLT the last key
// before it; All ranges over a forward scan.
func ExampleIterator_SeekGE() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"apple", "banana", "cherry", "date"} {
		db.Put([]byte(k), []byte(strconv.Itoa(len(k))), nil)
	}
	db.Delete([]byte("cherry"), nil)

	it := db.NewIter(nil)
	defer it.Close()
	if it.SeekGE([]byte("c")) { // cherry is deleted
		fmt.Printf("SeekGE(c): %s\n", it.Key())
	}
	if it.SeekLT([]byte("c")) {
		fmt.Printf("SeekLT(c): %s\n", it.Key())
	}
	var kvs []string
	for k, v := range it.All() {
		kvs = append(kvs, fmt.Sprintf("%s=%s", k, v))
	}
	fmt.Println(strings.Join(kvs, " "))
	if err := it.Error(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// SeekGE(c): date
	// SeekLT(c): banana
	// apple=5 banana=6 date=4
}

// An iterator over a snapshot sees the keys as they were when the
// snapshot was taken, whatever is written, deleted or flushed since.
func ExampleSnapshot_NewIter() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("a"), []byte("1"), nil)
	db.Put([]byte("b"), []byte("2"), nil)

	snap := db.NewSnapshot()
	defer snap.Close()
	db.Delete([]byte("a"), nil)
	db.Put([]byte("c"), []byte("3"), nil)
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}

	for _, it := range []*sieve.Iterator{snap.NewIter(nil), db.NewIter(nil)} {
		var kvs []string
		for k, v := range it.All() {
			kvs = append(kvs, fmt.Sprintf("%s=%s", k, v))
		}
		fmt.Println(strings.Join(kvs, " "))
		it.Close()
	}
	// Output:
	// a=1 b=2
	// b=2 c=3
}

// One batch may write to several column families: it is applied to all of
// them or to none.
func ExampleBatch_PutCF() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	users, err := db.OpenColumnFamily("users", nil)
	if err != nil {
		log.Fatal(err)
	}
	byEmail, err := db.OpenColumnFamily("users-by-email", nil)
	if err != nil {
		log.Fatal(err)
	}

	b := db.NewBatch()
	b.PutCF(users, []byte("u1"), []byte("ann@example.com"))
	b.PutCF(byEmail, []byte("ann@example.com"), []byte("u1"))
	b.Put([]byte("user-count"), []byte("1")) // the default family
	if err := db.Apply(b, sieve.Sync); err != nil {
		log.Fatal(err)
	}
	email, _ := users.Get([]byte("u1"))
	id, _ := byEmail.Get(email)
	n, _ := db.Get([]byte("user-count"))
	fmt.Printf("u1 -> %s -> %s; %s user\n", email, id, n)
	// Output: u1 -> ann@example.com -> u1; 1 user
}

// A database opened read-only replays its WAL into memory but writes
// nothing: no recovery writes, no flushes or compactions, and writes fail
// with ErrReadOnly.
func ExampleOptions_readOnly() {
	fs := vfs.NewMem()
	db, err := sieve.Open("demo", &sieve.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	db.Put([]byte("k"), []byte("v"), sieve.Sync)
	db.Close()

	ro, err := sieve.Open("demo", &sieve.Options{FS: fs, ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	v, _ := ro.Get([]byte("k"))
	fmt.Printf("k = %s\n", v)
	err = ro.Put([]byte("k"), []byte("w"), nil)
	fmt.Println(errors.Is(err, sieve.ErrReadOnly))
	// Output:
	// k = v
	// true
}

// Flush writes the memtable to an L0 table; Compact merges a key range
// down the tree (here all of it, into the bottom level); Metrics shows the
// shape and CheckInvariants verifies it.
func ExampleDB_Compact() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	shape := func(when string) {
		m := db.Metrics()
		fmt.Printf("%s: L0 %d tables, L6 %d tables, %d flushes, %d compactions\n",
			when, m.Levels[0].NumFiles, m.Levels[6].NumFiles, m.Flush.Count, m.Compaction.Count)
	}
	for round := range 3 {
		for i := range 100 {
			db.Put(fmt.Appendf(nil, "key%03d", i), fmt.Appendf(nil, "round %d", round), nil)
		}
		if err := db.Flush(); err != nil {
			log.Fatal(err)
		}
	}
	shape("after 3 flushes")
	if err := db.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}
	shape("after Compact")
	v, _ := db.Get([]byte("key042"))
	fmt.Printf("key042 = %s; invariants: %v\n", v, db.CheckInvariants(true))
	// Output:
	// after 3 flushes: L0 3 tables, L6 0 tables, 3 flushes, 0 compactions
	// after Compact: L0 0 tables, L6 1 tables, 3 flushes, 1 compactions
	// key042 = round 2; invariants: <nil>
}

// Each column family may have its own filter policy. (Filter and lookup
// counters are the database's; per-family Metrics give the levels.)
func ExampleColumnFamilyOptions_filterPolicy() {
	db, err := sieve.Open("demo", &sieve.Options{FS: vfs.NewMem()}) // default family: filter.Bloom(10)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	sessions, err := db.OpenColumnFamily("sessions", &sieve.ColumnFamilyOptions{FilterPolicy: filter.Cuckoo(16)})
	if err != nil {
		log.Fatal(err)
	}
	scanOnly, err := db.OpenColumnFamily("scan-only", &sieve.ColumnFamilyOptions{FilterPolicy: filter.None})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 1000 {
		sessions.Put(fmt.Appendf(nil, "s%04d", i), []byte("x"), nil)
		scanOnly.Put(fmt.Appendf(nil, "s%04d", i), []byte("x"), nil)
	}
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	for _, cf := range []*sieve.ColumnFamily{sessions, scanOnly} {
		before := db.Metrics()
		for i := range 500 {
			cf.Get(fmt.Appendf(nil, "s%04d.absent", i)) // inside the table's key range, never written
		}
		after := db.Metrics()
		fmt.Printf("%s: %d filter checks, %d data blocks read\n", cf.Name(),
			after.Filter.Checks-before.Filter.Checks, after.PointLookups.DataBlocksRead-before.PointLookups.DataBlocksRead)
	}
	// Output:
	// sessions: 500 filter checks, 0 data blocks read
	// scan-only: 0 filter checks, 500 data blocks read
}

// A key written with a deadline reads as absent from the deadline on, and
// compaction removes it. Options.Now is the clock; a test moves its own.
func ExampleDB_PutWithExpiry() {
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem(), Now: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.PutWithExpiry([]byte("uv:2026-12-06"), []byte("12KB of HLL"), now.Add(7*24*time.Hour), nil); err != nil {
		log.Fatal(err)
	}
	_, expiry, err := db.GetWithExpiry([]byte("uv:2026-12-06"))
	fmt.Println("expires:", expiry.UTC().Format(time.DateOnly), err)

	now = now.Add(7 * 24 * time.Hour) // a week later
	_, err = db.Get([]byte("uv:2026-12-06"))
	fmt.Println("a week later:", err)
	// Output:
	// expires: 2026-12-13 <nil>
	// a week later: sieve: not found
}
