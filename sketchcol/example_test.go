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
