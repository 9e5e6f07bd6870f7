package main

// Catch-up times (issue 55), behind SIEVE_CLUSTER_BENCH=1: a follower
// killed with SIGKILL and restarted, and a follower replaced with an
// empty disk (SIEVE.RAFT REMOVE, -raft-join, SIEVE.RAFT ADD), each timed
// from its restart to having every key (READONLY reads compared).

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// catchupKeys is the data set: keys written before the faults.
func catchupKeys() int {
	if n, err := strconv.Atoi(os.Getenv("SIEVE_CLUSTER_BENCH_KEYS")); err == nil && n > 0 {
		return n
	}
	return 200000
}

// loadKeys writes keys [from, to) through the cluster, 100 a MSET, from
// 16 goroutines.
func loadKeys(t *testing.T, rc *redis.ClusterClient, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for base := from + w*100; base < to; base += 1600 {
				var kv []any
				for k := base; k < min(base+100, to); k++ {
					kv = append(kv, fmt.Sprintf("ck:%07d", k), benchValue(k))
				}
				if err := rc.MSet(ctx, kv...).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// setKeys writes keys [from, to) through the cluster, one SET (one raft
// entry) each, from 256 goroutines.
func setKeys(t *testing.T, rc *redis.ClusterClient, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 256 {
		wg.Go(func() {
			for k := from + w; k < to; k += 256 {
				if err := rc.Set(ctx, fmt.Sprintf("ck:%07d", k), benchValue(k), 0).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// replInfo reads a field of INFO replication.
func replInfo(c *redis.Client, field string) (string, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return "", err
	}
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in INFO", field)
}

// appliedIndex reads raft_applied_index from INFO replication.
func appliedIndex(c *redis.Client) (uint64, error) {
	v, err := replInfo(c, "raft_applied_index")
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}

// readonlyClient is a client whose connections are in READONLY mode.
func readonlyClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute,
		OnConnect: func(ctx2 context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx2).Err() }})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// missingKeys counts the keys of [0, n) that the node does not have with
// their value (READONLY MGETs).
func missingKeys(t *testing.T, c *redis.Client, n int) int {
	t.Helper()
	missing := 0
	for base := 0; base < n; base += 1000 {
		var keys []string
		for k := base; k < min(base+1000, n); k++ {
			keys = append(keys, fmt.Sprintf("ck:%07d", k))
		}
		vals, err := c.MGet(ctx, keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if s, ok := v.(string); !ok || s != benchValue(base+i) {
				missing++
			}
		}
	}
	return missing
}

// timeCatchUp restarts nd (after prepare, if any), runs afterStart, and
// returns the time from the restart to nd's applied index reaching the
// leader's and to every one of the n keys read back.
func timeCatchUp(t *testing.T, nd, leader *testNode, n int, afterStart func()) (toIndex, toKeys time.Duration) {
	t.Helper()
	target, err := appliedIndex(newClient(t, leader.addr))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nd.start(t)
	if afterStart != nil {
		afterStart()
	}
	ro := readonlyClient(t, nd.addr)
	retry(t, 5*time.Minute, nd.id+" applied index", func() error {
		if i, err := appliedIndex(ro); err != nil || i < target {
			return fmt.Errorf("applied %d of %d (%v)", i, target, err)
		}
		return nil
	})
	toIndex = time.Since(start)
	retry(t, 5*time.Minute, nd.id+" keys", func() error {
		if m := missingKeys(t, ro, n); m > 0 {
			return fmt.Errorf("%d keys missing", m)
		}
		return nil
	})
	return toIndex, time.Since(start)
}

func dirMB(dir string) string {
	return fmt.Sprintf("%.1f MB", float64(dirSize(dir))/1e6)
}

// TestClusterCatchUp times a follower's catch-up after a SIGKILL (with
// writes while it is down: few, so the log has them, then more than
// raft's trailing logs and a snapshot on the leader, so it needs the
// snapshot) and after its disk is replaced by an empty one.
func TestClusterCatchUp(t *testing.T) {
	needClusterBench(t)
	nodes := startTestCluster(t, 3)
	leader := waitLeader(t, nodes, 30*time.Second)
	rc := benchClusterClient(t, nodes, 64)
	n := catchupKeys()
	t0 := time.Now()
	loadKeys(t, rc, 0, n)
	fmt.Printf("loaded %d keys (%d-byte values) in %v; leader dir %s\n", n, len(benchValue(0)), time.Since(t0).Round(time.Millisecond), dirMB(leader.dir))
	var f *testNode
	for _, nd := range nodes {
		if nd != leader {
			f = nd
			break
		}
	}
	for i, down := range []int{2000, 12000} {
		f.kill()
		if i == 0 {
			loadKeys(t, rc, n, n+down) // 20 entries: the log has them
		} else {
			// More entries than raft's TrailingLogs (10240), then a
			// snapshot on the leader: the log is truncated past f's index.
			setKeys(t, rc, n, n+down)
			if err := newClient(t, leader.addr).Do(ctx, "sieve.raft", "snapshot").Err(); err != nil {
				t.Fatal(err)
			}
		}
		n += down
		toIndex, toKeys := timeCatchUp(t, f, leader, n, nil)
		fmt.Printf("SIGKILL + restart, %d keys written while down (%d in all): applied index reached in %v, every key read in %v; %s\n",
			down, n, toIndex.Round(time.Millisecond), toKeys.Round(time.Millisecond), snapshotLines(t, f))
	}
	replaceEmpty(t, f, leader, n)
}

// replaceEmpty stops nd, removes it from the cluster, deletes its
// directory (the DB and the raft dir), restarts it with -raft-join and
// adds it again; it times the catch-up.
func replaceEmpty(t *testing.T, nd, leader *testNode, n int) {
	t.Helper()
	nd.stop()
	lc := newClient(t, leader.addr)
	if err := lc.Do(ctx, "sieve.raft", "remove", nd.id).Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(nd.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(nd.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raftAddr := ""
	for _, a := range nd.args {
		for p := range strings.SplitSeq(a, ",") {
			if v, ok := strings.CutPrefix(p, nd.id+"="); ok {
				raftAddr = v
			}
		}
	}
	joined := append([]string(nil), nd.args...)
	nd.args = append(nd.args, "-raft-join")
	toIndex, toKeys := timeCatchUp(t, nd, leader, n, func() {
		if err := lc.Do(ctx, "sieve.raft", "add", nd.id, raftAddr).Err(); err != nil {
			t.Fatal(err)
		}
	})
	nd.args = joined
	fmt.Printf("empty disk (REMOVE, -raft-join, ADD), %d keys: applied index reached in %v, every key read in %v; leader dir %s, new node's dir %s; %s\n",
		n, toIndex.Round(time.Millisecond), toKeys.Round(time.Millisecond), dirMB(leader.dir), dirMB(nd.dir), snapshotLines(t, nd))
}

// snapshotLines reports the snapshots nd installed since it started.
func snapshotLines(t *testing.T, nd *testNode) string {
	c := newClient(t, nd.addr)
	restores, err1 := replInfo(c, "raft_snapshot_restores")
	last, err2 := replInfo(c, "raft_last_snapshot_index")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return fmt.Sprintf("snapshots installed %s (last snapshot index %s)", restores, last)
}
