package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testNode is one sieve-server process of a test cluster.
type testNode struct {
	id, addr, dir string
	args          []string
	cmd           *exec.Cmd
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// startTestCluster starts n nodes (this test binary as sieve-server in
// cluster mode) with the same -raft-peers, stopped when the test ends.
func startTestCluster(t *testing.T, n int) []*testNode {
	t.Helper()
	ports := freePorts(t, 2*n)
	var peers []string
	nodes := make([]*testNode, n)
	for i := range n {
		nodes[i] = &testNode{id: fmt.Sprintf("n%d", i+1), addr: fmt.Sprintf("127.0.0.1:%d", ports[2*i]), dir: t.TempDir()}
		peers = append(peers, fmt.Sprintf("%s=%s@%d", nodes[i].id, nodes[i].addr, ports[2*i+1]))
	}
	for _, nd := range nodes {
		nd.args = []string{"-addr", nd.addr, "-dir", nd.dir, "-raft-id", nd.id, "-raft-peers", strings.Join(peers, ",")}
		nd.start(t)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.stop()
		}
	})
	return nodes
}

func (nd *testNode) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], nd.args...)
	cmd.Env = append(os.Environ(), "SIEVE_SERVER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(nd.dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("node %s did not start: %v (see %s)", nd.id, err, logf.Name())
	}
	nd.cmd = cmd
}

func (nd *testNode) kill() {
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	_ = nd.cmd.Wait()
	nd.cmd = nil
}

func (nd *testNode) stop() {
	if nd.cmd != nil {
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
		_ = nd.cmd.Wait()
		nd.cmd = nil
	}
}

// waitLeader waits until every live node names the same leader in ROLE,
// and returns it.
func waitLeader(t *testing.T, nodes []*testNode, within time.Duration) *testNode {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if l := agreedLeader(t, nodes); l != nil {
			return l
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader agreed on within %v", within)
	return nil
}

func agreedLeader(t *testing.T, nodes []*testNode) *testNode {
	var leader *testNode
	seen := ""
	for _, nd := range nodes {
		if nd.cmd == nil {
			continue
		}
		role, err := newClient(t, nd.addr).Do(ctx, "role").Slice()
		if err != nil || len(role) == 0 {
			return nil
		}
		switch {
		case role[0] == "master":
			if leader != nil {
				return nil
			}
			leader = nd
		case len(role) >= 3 && role[0] == "slave":
			at := fmt.Sprintf("%v:%v", role[1], role[2])
			if seen != "" && seen != at {
				return nil
			}
			seen = at
		default:
			return nil
		}
	}
	if leader == nil || (seen != "" && seen != leader.addr) {
		return nil
	}
	return leader
}

func newClusterClient(t *testing.T, nodes []*testNode) *redis.ClusterClient {
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: 2, DisableIdentity: true,
		MaxRedirects: 8, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		// A dead master's connection errors make go-redis retry the same
		// node; it rereads CLUSTER SLOTS at this interval (default 60 s).
		ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// retry runs f until it succeeds or within passes.
func retry(t *testing.T, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after %v: %v", what, within, err)
}

// checkClusterShape checks CLUSTER SLOTS and CLUSTER NODES on every node.
func checkClusterShape(t *testing.T, nodes []*testNode, leader *testNode) {
	t.Helper()
	for _, nd := range nodes {
		c := newClient(t, nd.addr)
		slots, err := c.ClusterSlots(ctx).Result()
		if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || len(slots[0].Nodes) != len(nodes) {
			t.Fatalf("%s: CLUSTER SLOTS %+v, %v", nd.id, slots, err)
		}
		if slots[0].Nodes[0].Addr != leader.addr {
			t.Fatalf("%s: CLUSTER SLOTS master %s, want the leader %s", nd.id, slots[0].Nodes[0].Addr, leader.addr)
		}
		lines := strings.Split(strings.TrimSpace(do(c, "cluster", "nodes")), "\n")
		masters, myself := 0, 0
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 8 || len(f[0]) != 40 {
				t.Fatalf("%s: CLUSTER NODES line %q", nd.id, l)
			}
			if strings.Contains(f[2], "master") {
				masters++
				if f[len(f)-1] != "0-16383" || !strings.HasPrefix(f[1], leader.addr+"@") {
					t.Fatalf("%s: master line %q", nd.id, l)
				}
			}
			if strings.Contains(f[2], "myself") {
				myself++
			}
		}
		if len(lines) != len(nodes) || masters != 1 || myself != 1 {
			t.Fatalf("%s: CLUSTER NODES\n%s", nd.id, strings.Join(lines, "\n"))
		}
		if info := do(c, "cluster", "info"); !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("%s: CLUSTER INFO %q", nd.id, info)
		}
	}
}

// dumpNode reads every key of a node with READONLY reads.
func dumpNode(t *testing.T, nd *testNode) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: nd.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	cn := c.Conn()
	defer cn.Close()
	if err := cn.ReadOnly(ctx).Err(); err != nil {
		return nil, err
	}
	keys, err := cn.Keys(ctx, "*").Result()
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	out := map[string]string{}
	for _, k := range keys {
		v, err := cn.Do(ctx, "type", k).Text()
		switch {
		case err != nil:
		case v == "MBbloom--":
			v += " " + fmt.Sprint(cn.Do(ctx, "bf.card", k).Val())
		case strings.HasPrefix(k, "hll"):
			v += " " + fmt.Sprint(cn.PFCount(ctx, k).Val())
		default:
			v, err = cn.Get(ctx, k).Result()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", nd.id, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// waitSameData waits until every live node holds the same keys and values.
func waitSameData(t *testing.T, nodes []*testNode, within time.Duration) map[string]string {
	t.Helper()
	var first map[string]string
	retry(t, within, "identical data on every node", func() error {
		first = nil
		for _, nd := range nodes {
			d, err := dumpNode(t, nd)
			if err != nil {
				return err
			}
			if first == nil {
				first = d
				continue
			}
			if fmt.Sprint(d) != fmt.Sprint(first) {
				return fmt.Errorf("%s holds %d keys, %s %d (or values differ)", nodes[0].id, len(first), nd.id, len(d))
			}
		}
		return nil
	})
	return first
}

// TestCluster runs 3 sieve-server processes in cluster mode: Redis
// Cluster's surface, go-redis's ClusterClient writing and reading, MOVED
// from followers, the leader killed (SIGKILL) and the client going on with
// the new one, the killed node restarted and catching up.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t0 := time.Now()
	nodes := startTestCluster(t, 3)
	leader := waitLeader(t, nodes, 20*time.Second)
	t.Logf("leader %s elected in %v", leader.id, time.Since(t0).Round(time.Millisecond))
	checkClusterShape(t, nodes, leader)
	checkFollowerRedirects(t, nodes, leader)

	cc := newClusterClient(t, nodes)
	writeSome(t, cc, "a", 50)
	checkSome(t, cc, "a", 50, 50)

	t1 := time.Now()
	leader.kill()
	var n int64
	retry(t, 30*time.Second, "a write after the leader's SIGKILL", func() error {
		var err error
		n, err = cc.Incr(ctx, "ctr").Result()
		return err
	})
	t.Logf("first write acknowledged %v after the leader's SIGKILL (INCR → %d)", time.Since(t1).Round(time.Millisecond), n)
	if n != 51 {
		t.Errorf("INCR after failover = %d, want 51", n)
	}
	live := []*testNode{}
	for _, nd := range nodes {
		if nd != leader {
			live = append(live, nd)
		}
	}
	newLeader := waitLeader(t, live, 20*time.Second)
	writeSome(t, cc, "b", 30)
	checkSome(t, cc, "b", 30, 81)

	t2 := time.Now()
	leader.start(t)
	waitLeader(t, nodes, 20*time.Second)
	data := waitSameData(t, nodes, 30*time.Second)
	t.Logf("new leader %s; killed node restarted and identical on every key (%d keys) %v after restart",
		newLeader.id, len(data), time.Since(t2).Round(time.Millisecond))
	checkClusterShape(t, nodes, waitLeader(t, nodes, 5*time.Second))
}

// checkFollowerRedirects checks that a follower answers -MOVED to writes
// and to reads without READONLY, and serves reads after READONLY.
func checkFollowerRedirects(t *testing.T, nodes []*testNode, leader *testNode) {
	t.Helper()
	lc := newClient(t, leader.addr)
	if err := lc.Set(ctx, "foo", "bar", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		if nd == leader {
			continue
		}
		c := newClient(t, nd.addr)
		want := fmt.Sprintf("MOVED %d %s", keySlot([]byte("foo")), leader.addr)
		if got := do(c, "set", "foo", "x"); got != "ERR:"+want {
			t.Fatalf("%s: SET = %q, want %q", nd.id, got, want)
		}
		if got := do(c, "get", "foo"); got != "ERR:"+want {
			t.Fatalf("%s: GET without READONLY = %q, want %q", nd.id, got, want)
		}
		cn := c.Conn()
		_ = cn.ReadOnly(ctx).Err()
		retry(t, 5*time.Second, "READONLY GET", func() error {
			if v, err := cn.Get(ctx, "foo").Result(); err != nil || v != "bar" {
				return fmt.Errorf("GET = %q, %v", v, err)
			}
			return nil
		})
		_ = cn.Close()
	}
}

// writeSome writes, through the cluster client, n SETs, n INCRs, a PFADD
// of n elements and n BF.ADDs, all tagged with round.
func writeSome(t *testing.T, cc *redis.ClusterClient, round string, n int) {
	t.Helper()
	for i := range n {
		k := fmt.Sprintf("k-%s-%d", round, i)
		retry(t, 20*time.Second, "SET", func() error { return cc.Set(ctx, k, "v"+k, 0).Err() })
		if err := cc.Incr(ctx, "ctr").Err(); err != nil {
			t.Fatalf("INCR: %v", err)
		}
		if err := cc.PFAdd(ctx, "hll-"+round, k).Err(); err != nil {
			t.Fatalf("PFADD: %v", err)
		}
		if err := cc.BFAdd(ctx, "bf-"+round, k).Err(); err != nil {
			t.Fatalf("BF.ADD: %v", err)
		}
	}
}

// checkSome reads back what writeSome wrote, and the counter.
func checkSome(t *testing.T, cc *redis.ClusterClient, round string, n int, ctr int64) {
	t.Helper()
	for i := range n {
		k := fmt.Sprintf("k-%s-%d", round, i)
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != "v"+k {
			t.Fatalf("GET %s = %q, %v", k, v, err)
		}
		if ok, err := cc.BFExists(ctx, "bf-"+round, k).Result(); err != nil || !ok {
			t.Fatalf("BF.EXISTS %s = %v, %v", k, ok, err)
		}
	}
	if c, err := cc.PFCount(ctx, "hll-"+round).Result(); err != nil || c < int64(n)*97/100 || c > int64(n)*103/100 {
		t.Fatalf("PFCOUNT = %d, %v; want about %d", c, err, n)
	}
	if v, err := cc.Get(ctx, "ctr").Int64(); err != nil || v != ctr {
		t.Fatalf("ctr = %d, %v; want %d", v, err, ctr)
	}
}
