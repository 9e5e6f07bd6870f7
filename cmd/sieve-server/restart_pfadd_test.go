package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve/internal/testutil"
)

// TestPipelinedPFAddRestart: redis-benchmark's PFADD shape (clients
// pipelining 16 PFADD hll:<r> e:<r> over many keys (elements drawn from
// 16, so that some PFADDs change nothing), written as one batch
// per pipeline) in the default mode (no -sync), then a clean Close (what
// SIGTERM does) and a restart: every key's GET bytes and PFCOUNT are the
// same, and every acknowledged element is there (PFADD of them again
// changes nothing).
func TestPipelinedPFAddRestart(t *testing.T) {
	seed := testutil.Seed(t)
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	const clients, depth = 4, 16
	pipelines, keys := 150, 2000
	if testing.Short() {
		pipelines, keys = 40, 300
	}
	acked, changed := pipelinePFAdds(t, s, seed, clients, depth, pipelines, keys)
	if t.Failed() {
		return
	}
	c := newClient(t, s.Addr())
	all := map[string][]string{}
	nchanged := 0
	for g := range clients {
		for k, es := range acked[g] {
			all[k] = append(all[k], es...)
		}
		nchanged += changed[g]
	}
	// Half the keys are PFCOUNTed (a valid Redis cache), half are left
	// with the stale cache the PFADDs made.
	counts := map[string]string{}
	i := 0
	for k := range all {
		if i%2 == 0 {
			counts[k] = do(c, "pfcount", k)
		}
		i++
	}
	before := snapshotKeys(t, c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, dir, nil)
	c2 := newClient(t, s2.Addr())
	after := snapshotKeys(t, c2)
	if len(before) != len(all) || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("seed %d: %d keys written, %d before the restart, %d after; values differ: %v", seed, len(all), len(before), len(after), fmt.Sprint(before) != fmt.Sprint(after))
	}
	for k, n := range counts {
		if got := do(c2, "pfcount", k); got != n {
			t.Fatalf("seed %d: %s: PFCOUNT %s before the restart, %s after", seed, k, n, got)
		}
	}
	for k, es := range all {
		if got := do(c2, append([]any{"pfadd", k}, anys(es)...)...); got != "0" {
			t.Fatalf("seed %d: %s: acknowledged elements missing after the restart", seed, k)
		}
	}
	t.Logf("%d PFADDs acknowledged (%d changed registers) on %d keys, %d PFCOUNTed; all the same after the restart",
		clients*pipelines*depth, nchanged, len(all), len(counts))
	if nchanged == 0 || len(counts) == 0 || nchanged == clients*pipelines*depth {
		t.Fatalf("seed %d: cases not reached: %d changed of %d", seed, nchanged, clients*pipelines*depth)
	}
}

// pipelinePFAdds runs the clients' pipelines of PFADDs against s and
// returns, per client, the elements acknowledged per key and how many
// PFADDs changed registers.
func pipelinePFAdds(t *testing.T, s *Server, seed int64, clients, depth, pipelines, keys int) ([]map[string][]string, []int) {
	acked := make([]map[string][]string, clients)
	changed := make([]int, clients)
	var wg sync.WaitGroup
	for g := range clients {
		acked[g] = map[string][]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			c := newClient(t, s.Addr())
			for range pipelines {
				p := c.Pipeline()
				var cmds []*redis.IntCmd
				var ks, es []string
				for range depth {
					k, e := fmt.Sprintf("hll:%012d", rng.IntN(keys)), fmt.Sprintf("e:%012d", rng.IntN(16))
					cmds = append(cmds, p.PFAdd(ctx, k, e))
					ks, es = append(ks, k), append(es, e)
				}
				if _, err := p.Exec(ctx); err != nil {
					t.Errorf("seed %d: %v", seed, err)
					return
				}
				for i, cmd := range cmds {
					acked[g][ks[i]] = append(acked[g][ks[i]], es[i])
					changed[g] += int(cmd.Val())
				}
			}
		}()
	}
	wg.Wait()
	return acked, changed
}
