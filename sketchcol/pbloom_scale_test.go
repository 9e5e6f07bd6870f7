package sketchcol

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sievedb/sieve"
)

// TestPagedBloomScale measures BF.ADD and BF.EXISTS through the Store on
// a filter reserved for 100M items at 1% with 10M items added, beside one
// reserved for 1M with 100k added: one command at a time, p50 and p99 of
// each, ops/s, and the data directory's size. It runs only when asked
// (make bloom-scale; SIEVE_BLOOM_SCALE=<items in the large filter> sets
// the fill, default 10,000,000; SIEVE_BLOOM_SCALE_DIR keeps the database
// there; SIEVE_PAGE_CACHE_MIB sets StoreOptions.PageCacheSize) and takes
// a few minutes.
func TestPagedBloomScale(t *testing.T) {
	fill := os.Getenv("SIEVE_BLOOM_SCALE")
	if fill == "" {
		t.Skip("set SIEVE_BLOOM_SCALE (make bloom-scale)")
	}
	n, err := strconv.ParseInt(fill, 10, 64)
	if err != nil || n < 1 {
		n = 10_000_000
	}
	dir := t.TempDir()
	if d := os.Getenv("SIEVE_BLOOM_SCALE_DIR"); d != "" {
		dir = d // kept, for sieve lsm
	}
	db, err := sieve.Open(dir, scaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var so StoreOptions
	if mib, err := strconv.ParseInt(os.Getenv("SIEVE_PAGE_CACHE_MIB"), 10, 64); err == nil {
		so.PageCacheSize = mib << 20 // 0: the default; negative: off
	}
	st, err := OpenWithOptions(db, &so)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page cache %d MiB", st.pageBudget.limit>>20)
	for _, f := range []struct {
		key      string
		capacity int64
		fill     int64
	}{{"small", 1_000_000, n / 100}, {"large", 100_000_000, n}} {
		key := []byte(f.key)
		if err := st.BFReserve(key, 0.01, f.capacity, nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		batch := make([][]byte, 0, 1000)
		for i := int64(0); i < f.fill; i++ {
			batch = append(batch, fmt.Appendf(nil, "%s-%d", f.key, i))
			if len(batch) == cap(batch) || i == f.fill-1 {
				if _, err := st.BFMAdd(key, batch...); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		load := time.Since(start)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		add := timeOps(t, 20000, func(i int) error {
			_, err := st.BFAdd(key, fmt.Appendf(nil, "new-%s-%d", f.key, i))
			return err
		})
		exists := timeOps(t, 20000, func(i int) error {
			_, err := st.BFExists(key, fmt.Appendf(nil, "%s-%d", f.key, int64(i)*7919%f.fill))
			return err
		})
		info, _ := st.BFInfo(key)
		t.Logf("%s: reserved %d at 1%%, %d items (loaded by BF.MADD of 1000 in %v, %.0f items/s); BF.ADD %s; BF.EXISTS %s; BF.INFO size %d MB, %d sub-filters",
			f.key, f.capacity, f.fill, load.Round(time.Millisecond), float64(f.fill)/load.Seconds(), add, exists, info.Size>>20, info.Filters)
	}
	compactAndCount(t, st, dir)
}

// compactAndCount compacts both sketch families and logs the data
// directory's size and the pages written (one entry each, after it).
func compactAndCount(t *testing.T, st *Store, dir string) {
	for _, cf := range []*sieve.ColumnFamily{st.cf, st.pages} {
		if err := cf.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	var pages int64
	for _, l := range st.pages.Metrics().Levels {
		pages += l.Size
	}
	it := st.pages.NewIter(nil)
	written := 0
	for ok := it.First(); ok; ok = it.Next() {
		written++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("after a full compaction: data directory %d MB, of which the pages' tables %d MB; %d pages written (sieve lsm -tables %s: their tables' entries)",
		dirSize(t, dir)>>20, pages>>20, written, dir)
}

// opTimes summarizes timed commands.
type opTimes struct {
	p50, p99 time.Duration
	perSec   float64
}

func (o opTimes) String() string {
	return fmt.Sprintf("p50 %v p99 %v (%.0f ops/s)", o.p50, o.p99, o.perSec)
}

func timeOps(t *testing.T, n int, f func(i int) error) opTimes {
	d := make([]time.Duration, n)
	start := time.Now()
	for i := range n {
		s := time.Now()
		if err := f(i); err != nil {
			t.Fatal(err)
		}
		d[i] = time.Since(s)
	}
	total := time.Since(start)
	slices.Sort(d)
	return opTimes{p50: d[n/2], p99: d[n*99/100], perSec: float64(n) / total.Seconds()}
}

func dirSize(t *testing.T, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func scaleOptions() *sieve.Options {
	o := &sieve.Options{}
	if os.Getenv("SIEVE_SCALE_NOSUCC") != "" {
		o.MaxSuccessiveMerges = -1
	}
	return o
}
