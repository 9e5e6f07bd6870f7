package main

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
)

// TestPipelinedCFAdd pipelines CF.ADD and CF.ADDNX (with CF.EXISTS,
// CF.COUNT, CF.DEL, SET and DEL among them: filters that grow, one that
// cannot, one that reaches RedisBloom's most sub-filters, missing keys,
// another type, re-created keys) through one connection of a server that
// batches pipelines, and sends the same commands one at a time to a
// server that does not: every reply must be the same.
func TestPipelinedCFAdd(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	pip := newClient(t, startServer(t, "", nil).Addr())
	one := newClient(t, startServer(t, "", func(c *Config) { c.BatchPipeline = false }).Addr())
	setup := [][]any{
		{"cf.reserve", "cf", "64", "bucketsize", "2", "maxiterations", "5", "expansion", "2"},
		{"cf.reserve", "full", "32", "bucketsize", "1", "maxiterations", "3", "expansion", "0"},
		{"cf.reserve", "max", "2", "bucketsize", "1", "maxiterations", "1", "expansion", "1"},
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
	seen := map[string]bool{}
	for p := range pipelines {
		cmds := make([][]any, 1+rng.IntN(100))
		for i := range cmds {
			cmds[i] = cfCmd(rng)
		}
		got := runPipeline(pip, cmds)
		for i, a := range cmds {
			want := do(one, a...)
			if got[i] != want {
				t.Fatalf("pipeline %d command %d/%d %v: pipelined %q, one at a time %q", p, i, len(cmds), a, got[i], want)
			}
			seen[want] = true
		}
	}
	for _, r := range []string{"0", "1", "ERR:Maximum expansions reached", "ERR:Filter is full", "ERR:WRONGTYPE Operation against a key holding the wrong kind of value"} {
		if !seen[r] && !testing.Short() {
			t.Errorf("no reply %q in the test", r)
		}
	}
	if got, want := do(pip, "cf.info", "max"), do(one, "cf.info", "max"); got != want {
		t.Fatalf("cf.info: %q, one at a time %q", got, want)
	}
}

// cfCmd is a random command for TestPipelinedCFAdd.
func cfCmd(rng *rand.Rand) []any {
	key := []string{"cf", "cf", "cf", "full", "max", "max", "str", "k" + strconv.Itoa(rng.IntN(6))}[rng.IntN(8)]
	item := "i" + strconv.Itoa(int(rng.ExpFloat64()*40))
	switch n := rng.IntN(100); {
	case n < 45:
		return []any{"cf.add", key, item}
	case n < 70:
		return []any{"cf.addnx", key, item}
	case n < 84:
		return []any{"cf.exists", key, item}
	case n < 94:
		return []any{"cf.count", key, item}
	case n < 97:
		return []any{"cf.del", key, item}
	case n < 98:
		return []any{"set", "k" + strconv.Itoa(rng.IntN(6)), "v"}
	}
	return []any{"del", "k" + strconv.Itoa(rng.IntN(6))}
}
