package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
)

// TestPipelinedCounters pipelines CMS.INCRBY, CMS.QUERY, TOPK.ADD,
// TOPK.INCRBY and TOPK.LIST (with bad arguments, missing keys, other
// types, overflows and re-created keys among them) through one
// connection of a server that batches pipelines, and sends the same
// commands one at a time to a server that does not: every reply must be
// the same.
func TestPipelinedCounters(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	pip := newClient(t, startServer(t, "", nil).Addr())
	one := newClient(t, startServer(t, "", func(c *Config) { c.BatchPipeline = false }).Addr())
	setup := [][]any{
		{"cms.initbydim", "cms", "1500", "4"},
		{"cms.initbydim", "cms2", "30", "2"},
		{"topk.reserve", "tk", "5", "40", "4", "0.9"},
		{"topk.reserve", "tk2", "3", "8", "3", "0.5"},
		{"set", "str", "v"},
	}
	for _, a := range setup {
		if got, want := do(pip, a...), do(one, a...); got != want || got != "OK" {
			t.Fatalf("%v: %q and %q", a, got, want)
		}
	}
	pipelines := 150
	if testing.Short() {
		pipelines = 40
	}
	for p := range pipelines {
		cmds := make([][]any, 1+rng.IntN(80))
		for i := range cmds {
			cmds[i] = counterCmd(rng)
		}
		got := runPipeline(pip, cmds)
		for i, a := range cmds {
			if want := do(one, a...); got[i] != want {
				t.Fatalf("pipeline %d command %d/%d %v: pipelined %q, one at a time %q", p, i, len(cmds), a, got[i], want)
			}
		}
	}
}

// counterCmd is a random Count-Min or Top-K command for
// TestPipelinedCounters.
func counterCmd(rng *rand.Rand) []any {
	item := func() string { return "i" + strconv.Itoa(int(rng.ExpFloat64()*15)) }
	incr := func() string {
		switch rng.IntN(150) {
		case 0:
			return "x"
		case 1:
			return "-1"
		case 2:
			return "4294967295"
		case 3:
			return "100001"
		}
		return strconv.Itoa(rng.IntN(9))
	}
	cms := []string{"cms", "cms", "cms2", "nocms", "str", "tk"}[rng.IntN(6)]
	tk := []string{"tk", "tk", "tk2", "notk", "str", "cms"}[rng.IntN(6)]
	switch n := rng.IntN(100); {
	case n < 35:
		a := []any{"cms.incrby", cms}
		for range 1 + rng.IntN(3) {
			a = append(a, item(), incr())
		}
		if rng.IntN(60) == 0 {
			a = a[:len(a)-1] // an odd count
		}
		return a
	case n < 45:
		return []any{"cms.query", cms, item(), item()}
	case n < 70:
		a := []any{"topk.add", tk}
		for range 1 + rng.IntN(3) {
			a = append(a, item())
		}
		return a
	case n < 82:
		a := []any{"topk.incrby", tk}
		for range 1 + rng.IntN(2) {
			a = append(a, item(), incr())
		}
		return a
	case n < 90:
		return []any{"topk.list", tk, "withcount"}
	case n < 93:
		return []any{"topk.list", tk}
	case n < 96:
		return []any{"topk.count", tk, item()}
	case n < 98:
		return []any{"del", cms}
	default:
		return []any{"cms.initbydim", cms, "200", "3"}
	}
}

// TestPipelinedCountersConcurrent: clients pipelining CMS.INCRBY and
// TOPK.ADD to one key at once lose no increment.
func TestPipelinedCountersConcurrent(t *testing.T) {
	s := startServer(t, "", nil)
	c := newClient(t, s.Addr())
	if got := do(c, "cms.initbydim", "cms", "300", "3"); got != "OK" {
		t.Fatal(got)
	}
	if got := do(c, "topk.reserve", "tk", "3", "50", "3", "0.9"); got != "OK" {
		t.Fatal(got)
	}
	const clients, pipelines, depth = 8, 20, 30
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			cl := newClient(t, s.Addr())
			for p := range pipelines {
				cmds := make([][]any, depth)
				for i := range cmds {
					if i%2 == 0 {
						cmds[i] = []any{"cms.incrby", "cms", fmt.Sprint("a", (w+p+i)%7), "1"}
					} else {
						cmds[i] = []any{"topk.add", "tk", "hot"}
					}
				}
				for i, r := range runPipeline(cl, cmds) {
					if len(r) == 0 || r[0] != '[' {
						t.Errorf("client %d pipeline %d command %d: %q", w, p, i, r)
					}
				}
			}
		})
	}
	wg.Wait()
	want := clients * pipelines * depth / 2
	if got, exp := do(c, "cms.info", "cms"), fmt.Sprintf("[width 300 depth 3 count %d]", want); got != exp {
		t.Fatalf("CMS.INFO %q, want %q", got, exp)
	}
	if got, exp := do(c, "topk.list", "tk", "withcount"), fmt.Sprintf("[hot %d]", want); got != exp {
		t.Fatalf("TOPK.LIST %q, want %q", got, exp)
	}
}
