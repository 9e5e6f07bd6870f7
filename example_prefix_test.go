package sieve_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
)

// A prefix seek reads only the keys of one prefix ("user42/" of
// "user42/cart"), skipping every table whose filter rules the prefix out.
func ExampleIterator_SeekPrefixGE() {
	db, err := sieve.Open("demo", &sieve.Options{
		FS:         vfs.NewMem(),
		Prefix:     func(k []byte) int { return bytes.IndexByte(k, '/') + 1 },
		PrefixName: "upto-slash",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"user41/cart", "user42/cart", "user42/name", "user43/name"} {
		if err := db.Put([]byte(k), []byte("v"), nil); err != nil {
			log.Fatal(err)
		}
	}
	it := db.NewIter(nil)
	defer it.Close()
	for ok := it.SeekPrefixGE([]byte("user42/")); ok; ok = it.Next() {
		fmt.Println(string(it.Key()))
	}
	// Output:
	// user42/cart
	// user42/name
}

// An external table, written outside the database, is ingested whole.
func ExampleDB_Ingest() {
	fs := vfs.NewMem()
	db, err := sieve.Open("demo", &sieve.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	w, err := sieve.NewExternalTableWriter("bulk.sst", &sieve.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := w.Set([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if err := db.Ingest([]string{"bulk.sst"}); err != nil {
		log.Fatal(err)
	}
	v, _ := db.Get([]byte("k1"))
	fmt.Println(string(v))
	fmt.Println(db.Ingest([]string{"bulk.sst"}) != nil) // a table is ingested once
	// Output:
	// v1
	// true
}
