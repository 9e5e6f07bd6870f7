package sketchcol

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/sievedb/sieve"
)

// TestPagedCountersScale measures CMS.INCRBY on a 3000×30 Count-Min
// sketch and TOPK.ADD on a Top-K of k=50, 2000×7, through the Store, one
// command of one item at a time (items uniform over 100k for Count-Min,
// Zipf-skewed for Top-K): p50, p99 and ops/s of 20,000 commands after
// 200,000 loaded. It runs only when asked (SIEVE_COUNTERS_SCALE=1) and
// takes under a minute.
func TestPagedCountersScale(t *testing.T) {
	if os.Getenv("SIEVE_COUNTERS_SCALE") == "" {
		t.Skip("set SIEVE_COUNTERS_SCALE=1")
	}
	db, err := sieve.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 99_999)
	cms, tk := []byte("cms"), []byte("tk")
	if err := st.CMSInitByDim(cms, 3000, 30); err != nil {
		t.Fatal(err)
	}
	if err := st.TopKReserve(tk, 50, 2000, 7, 0.9); err != nil {
		t.Fatal(err)
	}
	one := []int64{1}
	incr := func(int) error {
		_, err := st.CMSIncrBy(cms, [][]byte{fmt.Appendf(nil, "i%d", rng.IntN(100_000))}, one)
		return err
	}
	add := func(int) error {
		_, err := st.TopKAdd(tk, fmt.Appendf(nil, "i%d", zipf.Uint64()))
		return err
	}
	for i := range 200_000 {
		if err := incr(i); err != nil {
			t.Fatal(err)
		}
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("CMS.INCRBY 3000×30: %s", timeOps(t, 20000, incr))
	t.Logf("TOPK.ADD k=50 2000×7: %s", timeOps(t, 20000, add))
}
