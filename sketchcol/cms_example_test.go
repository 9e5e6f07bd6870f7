package sketchcol_test

import (
	"fmt"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/sketchcol"
	"github.com/sievedb/sieve/vfs"
)

func Example_countMinAndTopK() {
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	st, err := sketchcol.Open(db)
	if err != nil {
		panic(err)
	}

	// Page views: a Count-Min sketch at ε = 0.1%, δ = 1% (2000 × 7),
	// incremented blind (no read), queried once.
	if err := st.CMSInitByProb([]byte("views"), 0.001, 0.01); err != nil {
		panic(err)
	}
	for _, page := range []string{"/", "/about", "/", "/"} {
		if err := st.CMSIncrByBlind([]byte("views"), [][]byte{[]byte(page)}, []int64{1}); err != nil {
			panic(err)
		}
	}
	n, _ := st.CMSQuery([]byte("views"), []byte("/"), []byte("/about"), []byte("/never"))
	fmt.Println("views:", n)
	_, err = st.CMSIncrBy([]byte("clicks"), [][]byte{[]byte("/")}, []int64{1})
	fmt.Println(err)

	// The two heaviest hitters.
	_ = st.TopKReserve([]byte("heavy"), 2, 50, 4, 0.9)
	for _, u := range []string{"ann", "bob", "ann", "cid", "ann", "bob", "dan"} {
		if _, err := st.TopKAdd([]byte("heavy"), []byte(u)); err != nil {
			panic(err)
		}
	}
	top, _ := st.TopKListWithCount([]byte("heavy"))
	for _, e := range top {
		fmt.Printf("%s %d\n", e.Item, e.Count)
	}

	// Output:
	// views: [3 1 0]
	// CMS: key does not exist
	// ann 3
	// bob 2
}
