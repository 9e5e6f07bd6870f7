package sieve_test

import (
	"errors"
	"fmt"
	"log"
	"strconv"

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
