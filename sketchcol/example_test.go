package sketchcol_test

import (
	"fmt"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
	"github.com/sievedb/sieve/vfs"
)

func Example() {
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	st, err := sketchcol.Open(db)
	if err != nil {
		panic(err)
	}

	// Distinct visitors: blind adds (no read), one count.
	for _, user := range []string{"ann", "bob", "ann", "cid"} {
		if err := st.PFAddBlind([]byte("visitors"), []byte(user)); err != nil {
			panic(err)
		}
	}
	n, _ := st.PFCount([]byte("visitors"))
	fmt.Println("visitors:", n)

	// A crawler's seen-set: BFAdd answers whether the URL is new.
	_ = st.BFReserve([]byte("crawled"), 0.001, 1_000_000, nil)
	first, _ := st.BFAdd([]byte("crawled"), []byte("https://example.com/"))
	again, _ := st.BFAdd([]byte("crawled"), []byte("https://example.com/"))
	fmt.Println("new:", first, again)

	// A cuckoo filter can delete.
	_, _ = st.CFAdd([]byte("sessions"), []byte("s1"))
	deleted, _ := st.CFDel([]byte("sessions"), []byte("s1"))
	present, _ := st.CFExists([]byte("sessions"), []byte("s1"))
	fmt.Println("deleted:", deleted, "present:", present)

	// Output:
	// visitors: 3
	// new: true false
	// deleted: true present: false
}

// PFMerge folds several HyperLogLogs into one; PFCount over several keys
// counts their union without writing it.
func ExampleStore_PFMerge() {
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	st, err := sketchcol.Open(db)
	if err != nil {
		panic(err)
	}
	st.PFAdd([]byte("mon"), []byte("ann"), []byte("bob"))
	st.PFAdd([]byte("tue"), []byte("bob"), []byte("cid"), []byte("dan"))
	union, _ := st.PFCount([]byte("mon"), []byte("tue"))
	if err := st.PFMerge([]byte("week"), []byte("mon"), []byte("tue")); err != nil {
		panic(err)
	}
	week, _ := st.PFCount([]byte("week"))
	fmt.Println("union:", union, "week:", week)
	// Output: union: 4 week: 4
}

// A Batch commits blind sketch writes atomically, in one WAL write, here
// together with a write to the default column family.
func ExampleStore_NewBatch() {
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	st, err := sketchcol.Open(db)
	if err != nil {
		panic(err)
	}
	b := st.NewBatch()
	b.PFAdd([]byte("visitors"), []byte("ann"), []byte("bob"))
	b.BFAdd([]byte("seen"), []byte("/index.html"))
	b.Sieve().Put([]byte("last-import"), []byte("2026-12-01"))
	if err := b.Commit(sieve.Sync); err != nil {
		panic(err)
	}
	n, _ := st.PFCount([]byte("visitors"))
	seen, _ := st.BFExists([]byte("seen"), []byte("/index.html"))
	info, _ := st.BFInfo([]byte("seen"))
	last, _ := db.Get([]byte("last-import"))
	fmt.Printf("visitors %d, seen %v (%d item in %d filter), last import %s\n", n, seen, info.ItemsInserted, info.Filters, last)
	// Output: visitors 2, seen true (1 item in 1 filter), last import 2026-12-01
}
