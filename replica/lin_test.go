package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The linearizability test (issue 55, library level): clients doing puts of
// unique values, gets and increments (the counter merger, deduplicated by
// client ID and sequence number) on a few keys through the node they
// believe leads, while a nemesis crashes, pauses and partitions nodes and
// forces snapshot installs (one failing part way). Every history is
// checked with porcupine; after healing the three nodes must hold the
// same data and the counters every acknowledged increment. A mutant whose
// reads skip the leader check must be caught. Short form in go test;
// SIEVE_LIN_LONG=1 (make replica-linearizability) runs 60 s with every
// fault; SIEVE_SEED replays a seed.

type linConfig struct {
	seed    uint64
	dur     time.Duration
	clients int
	faults  []string // injected in this order
	random  bool     // then random faults until dur ends
	mode    linReadMode
}

type linReport struct {
	ops, unknown, dropped int
	unobserved            int // unknown puts dropped (no read saw them)
	pending, resolved     int // increments of unknown outcome, settled after healing
	faults                map[string]int
	installs, redone      int64
	restoreCrashes        int64
	result                porcupine.CheckResult
	vis                   string
	checkTook             time.Duration
}

func (r linReport) String() string {
	return fmt.Sprintf("ops %d (unknown outcome %d, of which puts never read %d; increments settled after healing %d of %d; dropped %d), faults %v, snapshot installs %d (failed part way %d, redone at open %d), result %s, checker %v",
		r.ops, r.unknown, r.unobserved, r.resolved, r.pending, r.dropped, r.faults, r.installs, r.restoreCrashes, r.redone, r.result, r.checkTook.Round(time.Millisecond))
}

func linSeed(t *testing.T) uint64 {
	if s := os.Getenv("SIEVE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SIEVE_SEED: %v", err)
		}
		return n
	}
	return rand.Uint64() % 1e9
}

func TestLinearizability(t *testing.T) {
	seed := linSeed(t)
	rounds, dur := 1, 3*time.Second
	if os.Getenv("SIEVE_LIN_LONG") != "" {
		rounds, dur = 6, 10*time.Second // 60 s of operations, one history per round
	}
	var total linReport
	total.faults = map[string]int{}
	for round := range rounds {
		cfg := linRoundConfig(seed+uint64(round), dur, rounds > 1)
		t.Logf("round %d: seed %d (replay: SIEVE_SEED=%d), %v of operations, %d clients, faults %v (then random: %v)",
			round, cfg.seed, seed, cfg.dur, cfg.clients, cfg.faults, cfg.random)
		rep := runLin(t, cfg)
		t.Logf("round %d: %v", round, rep)
		if rep.result == porcupine.Illegal {
			t.Errorf("history not linearizable (seed %d); visualization: %s", cfg.seed, rep.vis)
		}
		total.add(rep)
	}
	t.Logf("total: %d histories checked, %v", rounds, total)
	t.Run("mutant-reads-skip-leader-check", func(t *testing.T) { testLinMutant(t, seed) })
}

// linRoundConfig: the short form injects three faults (a crash of the
// leader or a follower, a partition or pause, a snapshot install failing
// part way or not); the long form every kind once, then random ones.
func linRoundConfig(seed uint64, dur time.Duration, long bool) linConfig {
	rng := rand.New(rand.NewPCG(seed, 1))
	cfg := linConfig{seed: seed, dur: dur, clients: 6}
	if long {
		cfg.clients, cfg.random, cfg.faults = 8, true, slices.Clone(allFaults)
	} else {
		cfg.faults = []string{
			[]string{faultKillLeader, faultKillFollower}[rng.IntN(2)],
			[]string{faultPartition, faultPartitionLink, faultPause}[rng.IntN(3)],
			[]string{faultSnapshot, faultRestoreCrash}[rng.IntN(2)],
		}
	}
	rng.Shuffle(len(cfg.faults), func(i, j int) { cfg.faults[i], cfg.faults[j] = cfg.faults[j], cfg.faults[i] })
	return cfg
}

func (r *linReport) add(o linReport) {
	r.ops += o.ops
	r.unknown += o.unknown
	r.dropped += o.dropped
	r.unobserved += o.unobserved
	r.pending += o.pending
	r.resolved += o.resolved
	for k, n := range o.faults {
		r.faults[k] += n
	}
	r.installs += o.installs
	r.redone += o.redone
	r.restoreCrashes += o.restoreCrashes
	r.checkTook += o.checkTook
	if r.result != porcupine.Illegal {
		r.result = o.result
	}
}

// testLinMutant runs the workload with reads that skip the leader check
// under a leader partition, over up to five seeds; the checker must find
// a violation in at least one (in the short form it stops at the first).
func testLinMutant(t *testing.T, seed uint64) {
	long := os.Getenv("SIEVE_LIN_LONG") != ""
	caught, tried := 0, 0
	for k := range uint64(5) {
		cfg := linConfig{seed: seed + 1000 + k, dur: 2 * time.Second, clients: 6, mode: readMutant,
			faults: []string{faultPartition, faultPartition}}
		rep := runLin(t, cfg)
		tried++
		t.Logf("mutant seed %d: %v", cfg.seed, rep)
		if rep.result == porcupine.Illegal {
			caught++
			t.Logf("caught: visualization %s", rep.vis)
			if !long {
				break
			}
		}
	}
	t.Logf("mutant caught in %d of %d runs", caught, tried)
	if caught == 0 {
		t.Errorf("reads without the leader check were never caught in %d runs", tried)
	}
}

// runLin runs one history: clients and nemesis for cfg.dur, then heals,
// reads every key linearizably, checks the history and compares the nodes.
func runLin(t *testing.T, cfg linConfig) linReport {
	c := newLinCluster(t)
	if c.waitLeader(10*time.Second) < 0 {
		t.Fatal("no leader")
	}
	h := &linHistory{start: time.Now()}
	nem := &nemesis{c: c, rng: rand.New(rand.NewPCG(cfg.seed, 2)), n: map[string]int{}}
	deadline := time.Now().Add(cfg.dur)
	var wg sync.WaitGroup
	var clients []*linClient
	for i := range cfg.clients {
		cl := &linClient{id: i, cid: cfg.seed<<8 | uint64(i+1), node: i % 3, c: c, h: h, mode: cfg.mode,
			rng: rand.New(rand.NewPCG(cfg.seed, uint64(10+i)))}
		clients = append(clients, cl)
		wg.Go(func() { cl.run(deadline) })
	}
	wg.Go(func() { nem.run(deadline, cfg.faults, cfg.random) })
	wg.Wait()
	c.heal(t)
	rep := linReport{faults: nem.n}
	for _, cl := range clients {
		rep.pending += len(cl.pending)
		cl.resolve()
		rep.resolved += cl.resolved
	}
	finalReads(t, c, h)
	rep.installs, rep.redone, rep.restoreCrashes = c.snapshotInstalls(), c.restoresAtStart.Load(), c.restoreCrashes.Load()
	rep.result, rep.vis, rep.checkTook = h.check(2 * time.Minute)
	rep.ops, rep.unknown, rep.dropped, rep.unobserved = h.known+h.unknown, h.unknown, h.dropped, h.unobserved
	checkCounters(t, h)
	c.compareNodes(t)
	return rep
}

// heal restarts every node that is down, reconnects everything and waits
// for a leader.
func (c *linCluster) heal(t *testing.T) {
	for i := range c.peers {
		c.isolate(i, false)
		if r, _ := c.node(i); r == nil {
			if err := c.start(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c.waitLeader(10*time.Second) < 0 {
		t.Fatal("no leader after healing")
	}
}

// finalReads reads every key linearizably after healing and adds the reads
// to the history: every acknowledged write must show in them.
func finalReads(t *testing.T, c *linCluster, h *linHistory) {
	read := func(family, key string) {
		for range 100 {
			r, _ := c.node(max(c.leader(), 0))
			if r == nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			call := h.now()
			v, err := r.Get(ctx, family, []byte(key))
			ret := h.now()
			cancel()
			if err == nil || errors.Is(err, ErrNotFound) {
				h.add(len(c.peers)+100, linInput{Kind: linGet, Family: family, Key: key}, linOutput{Value: string(v), Found: err == nil}, call, ret)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("final read of %s/%s: no leader answered", family, key)
	}
	for _, k := range linRegisters {
		read("", k)
	}
	for _, k := range linCounters {
		read("counters", k)
	}
}

// checkCounters: each counter's final value is at least the sum of its
// acknowledged increments and at most that plus the unknown ones (so no
// retried increment was applied twice).
func checkCounters(t *testing.T, h *linHistory) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lo, hi, final := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, op := range h.ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if in.Family != "counters" {
			continue
		}
		d, _ := strconv.ParseInt(in.Value, 10, 64)
		switch {
		case in.Kind == linGet && op.ClientId >= 100:
			final[in.Key], _ = strconv.ParseInt(out.Value, 10, 64)
		case in.Kind == linIncr && out.Unknown:
			hi[in.Key] += d
		case in.Kind == linIncr:
			lo[in.Key] += d
			hi[in.Key] += d
		}
	}
	for _, k := range linCounters {
		if final[k] < lo[k] || final[k] > hi[k] {
			t.Errorf("counter %s = %d after healing, want between %d (acknowledged) and %d (with unknown outcomes)", k, final[k], lo[k], hi[k])
		}
	}
}

// compareNodes waits until every node has applied what the leader has and
// compares their state machines key by key (the applied index aside).
func (c *linCluster) compareNodes(t *testing.T) {
	l, _ := c.node(c.waitLeader(10 * time.Second))
	want := l.AppliedIndex()
	var dumps []map[string]string
	for i := range c.peers {
		r, _ := c.node(i)
		for end := time.Now().Add(10 * time.Second); r.AppliedIndex() < want && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		d, err := dumpState(r)
		if err != nil {
			t.Fatalf("n%d: %v", i, err)
		}
		dumps = append(dumps, d)
	}
	for i := 1; i < len(dumps); i++ {
		for k, v := range dumps[0] {
			if dumps[i][k] != v {
				t.Errorf("n%d: %q = %q, n0 has %q", i, k, dumps[i][k], v)
			}
		}
		for k, v := range dumps[i] {
			if _, ok := dumps[0][k]; !ok {
				t.Errorf("n%d: %q = %q, n0 has none", i, k, v)
			}
		}
	}
}

// dumpState reads every key of every column family of r's state machine.
func dumpState(r *Replica) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range r.fsm.db.ColumnFamilies() {
		cf := r.fsm.meta
		if name != metaFamily {
			var err error
			if cf, err = r.fsm.family(name, false); err != nil {
				return nil, err
			}
		}
		it := cf.NewIter(nil)
		for ok := it.First(); ok; ok = it.Next() {
			if name == metaFamily && bytes.Equal(it.Key(), keyApplied) {
				continue
			}
			out[name+"/"+string(it.Key())] = string(it.Value())
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}
