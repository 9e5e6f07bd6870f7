package main

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve/internal/testutil"
)

// TestBitmapConcurrent runs goroutines that SETBIT, GETBIT, BITCOUNT and
// GET shared keys (each goroutine owning the bits ≡ its number modulo
// the goroutines, so that its oracle knows every reply) with a page cache
// small enough to evict, then checks every key's bytes against the
// oracles, before and after the cache is emptied.
func TestBitmapConcurrent(t *testing.T) {
	s := startServer(t, "", nil)
	s.ks.bits.limit = 8 * strPage // a few pages: evictions all the time
	const workers, keys, span = 8, 3, 3 * 8 * strPage
	seed := testutil.Seed(t)
	ops := 3000
	if testing.Short() {
		ops = 500
	}
	oracle := make([][]map[int64]bool, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		oracle[w] = make([]map[int64]bool, keys)
		for k := range keys {
			oracle[w][k] = map[int64]bool{}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, s.Addr())
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for range ops {
				if err := bitmapStep(c, rng, oracle[w], w, workers, span); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := newClient(t, s.Addr())
	for round := range 2 {
		for k := range keys {
			checkBitmap(t, c, fmt.Sprintf("bm%d", k), oracle, k)
		}
		s.ks.bits.clear() // the second round reads the pages from the database
		_ = round
	}
}

// bitmapStep runs one random command of worker w and checks its reply.
func bitmapStep(c *redis.Client, rng *rand.Rand, mine []map[int64]bool, w, workers int, span int64) error {
	k := rng.IntN(len(mine))
	key := fmt.Sprintf("bm%d", k)
	off := (rng.Int64N(span/int64(workers)))*int64(workers) + int64(w)
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4, 5:
		v := rng.IntN(2)
		old, err := c.SetBit(ctx, key, off, v).Result()
		if err != nil {
			return err
		}
		if want := bit01(mine[k][off]); old != want {
			return fmt.Errorf("SETBIT %s %d: %d, want %d", key, off, old, want)
		}
		mine[k][off] = v == 1
	case 6, 7:
		got, err := c.GetBit(ctx, key, off).Result()
		if err != nil {
			return err
		}
		if want := bit01(mine[k][off]); got != want {
			return fmt.Errorf("GETBIT %s %d: %d, want %d", key, off, got, want)
		}
	case 8:
		return c.BitCount(ctx, key, nil).Err()
	default:
		if err := c.Get(ctx, key).Err(); err != redis.Nil {
			return err
		}
	}
	return nil
}

func bit01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// checkBitmap compares key's bytes and BITCOUNT with the oracles' bits.
func checkBitmap(t *testing.T, c *redis.Client, key string, oracle [][]map[int64]bool, k int) {
	t.Helper()
	v, err := c.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for w := range oracle {
		for off, on := range oracle[w][k] {
			got := off>>3 < int64(len(v)) && v[off>>3]>>(7-uint(off&7))&1 == 1
			if got != on {
				t.Fatalf("%s bit %d: %v, want %v", key, off, got, on)
			}
			want += int(bit01(on))
		}
	}
	n := 0
	for i := range len(v) {
		n += bits.OnesCount8(v[i])
	}
	cnt, err := c.BitCount(ctx, key, nil).Result()
	if err != nil || n != want || cnt != int64(want) {
		t.Fatalf("%s: %d bits set, BITCOUNT %d (%v), want %d", key, n, cnt, err, want)
	}
}

// TestBitmapRestartAndTransaction: a paged string written by SETBIT,
// SETRANGE and APPEND reads the same after a restart; in MULTI/EXEC its
// reads see the transaction's own writes; SET and DEL replace it.
func TestBitmapRestartAndTransaction(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	c := newClient(t, s.Addr())
	for _, off := range []int64{0, 7, 32767, 32768, 100000, 1 << 20} {
		if err := c.SetBit(ctx, "b", off, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	must(t, c.SetRange(ctx, "b", 5000, "hello").Err())
	must(t, c.Append(ctx, "b", "tail").Err())
	before, err := c.Get(ctx, "b").Result()
	must(t, err)
	if len(before) != 1<<17+1+4 || !strings.HasSuffix(before, "tail") || before[5000:5005] != "hello" {
		t.Fatalf("GET: %d bytes", len(before))
	}
	pipe := c.TxPipeline()
	pipe.SetBit(ctx, "b", 9, 1)
	g := pipe.GetBit(ctx, "b", 9)
	bc := pipe.BitCount(ctx, "b", nil)
	_, err = pipe.Exec(ctx)
	must(t, err)
	if g.Val() != 1 || bc.Val() != bitsOf(before)+1 {
		t.Fatalf("in EXEC: GETBIT %d BITCOUNT %d, want 1 and %d", g.Val(), bc.Val(), bitsOf(before)+1)
	}
	before, _ = c.Get(ctx, "b").Result()
	must(t, s.Close())
	s2 := startServer(t, dir, nil)
	c2 := newClient(t, s2.Addr())
	after, err := c2.Get(ctx, "b").Result()
	must(t, err)
	if after != before {
		t.Fatalf("after a restart GET differs (%d bytes, was %d)", len(after), len(before))
	}
	must(t, c2.Set(ctx, "b", "x", 0).Err())
	if n, _ := c2.BitCount(ctx, "b", nil).Result(); n != 4 {
		t.Fatalf("BITCOUNT after SET: %d", n)
	}
	must(t, c2.SetBit(ctx, "b", 100000, 1).Err()) // a new paged string: no old page shows through
	if n, _ := c2.BitCount(ctx, "b", nil).Result(); n != 5 {
		t.Fatalf("BITCOUNT after SET and SETBIT: %d", n)
	}
	must(t, c2.Del(ctx, "b").Err())
	if n, _ := c2.Exists(ctx, "b").Result(); n != 0 {
		t.Fatal("DEL left the key")
	}
}

func bitsOf(s string) int64 {
	n := 0
	for i := range len(s) {
		n += bits.OnesCount8(s[i])
	}
	return int64(n)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
