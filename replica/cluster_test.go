package replica

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
)

// counter is a merge operator adding decimal integers.
type counter struct{}

func (counter) Name() string { return "replica.test.counter" }

func (counter) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	var sum int64
	if hasBase {
		n, err := strconv.ParseInt(string(base), 10, 64)
		if err != nil {
			return nil, err
		}
		sum = n
	}
	for _, op := range operands {
		n, err := strconv.ParseInt(string(op), 10, 64)
		if err != nil {
			return nil, err
		}
		sum += n
	}
	return []byte(strconv.FormatInt(sum, 10)), nil
}

func (counter) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) { return nil, false }

// cluster is n nodes in this process on raft.InmemTransport.
type cluster struct {
	t     *testing.T
	root  string
	nodes []*Replica
	trans []*raft.InmemTransport
	peers []Peer
}

func fastRaft() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.SnapshotThreshold = 1 << 20 // snapshots only when a test asks
	c.SnapshotInterval = time.Hour
	c.TrailingLogs = 10
	return c
}

func newCluster(t *testing.T, n int) *cluster {
	c := &cluster{t: t, root: t.TempDir(), nodes: make([]*Replica, n), trans: make([]*raft.InmemTransport, n)}
	for i := range n {
		c.peers = append(c.peers, Peer{ID: fmt.Sprintf("n%d", i), Addr: fmt.Sprintf("addr%d", i)})
	}
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for i, r := range c.nodes {
			if r != nil {
				c.stop(i)
			}
		}
	})
	return c
}

func (c *cluster) config(i int) Config {
	return Config{
		ID: c.peers[i].ID, Dir: filepath.Join(c.root, c.peers[i].ID), Peers: c.peers,
		Transport: c.trans[i], Raft: fastRaft(),
		Families: map[string]*sieve.ColumnFamilyOptions{"counters": {Merger: counter{}}},
	}
}

// start opens node i on a fresh transport connected both ways to the
// others.
func (c *cluster) start(i int) {
	_, c.trans[i] = raft.NewInmemTransport(raft.ServerAddress(c.peers[i].Addr))
	for j, tr := range c.trans {
		if j != i && tr != nil {
			tr.Connect(raft.ServerAddress(c.peers[i].Addr), c.trans[i])
			c.trans[i].Connect(raft.ServerAddress(c.peers[j].Addr), tr)
		}
	}
	r, err := Open(c.config(i))
	if err != nil {
		c.t.Fatalf("open n%d: %v", i, err)
	}
	c.nodes[i] = r
}

// stop closes node i and cuts it off.
func (c *cluster) stop(i int) {
	for j, tr := range c.trans {
		if j != i && tr != nil {
			tr.Disconnect(raft.ServerAddress(c.peers[i].Addr))
		}
	}
	c.trans[i].Close()
	if err := c.nodes[i].Close(); err != nil {
		c.t.Errorf("close n%d: %v", i, err)
	}
	c.nodes[i] = nil
}

// leader waits for a leader among the running nodes.
func (c *cluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, r := range c.nodes {
			if r != nil && r.IsLeader() {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader elected")
	return -1
}

// converge waits until every running node's state machine has applied
// what the leader's has (the state machine's index: raft's AppliedIndex
// runs ahead of it, and no-op entries never reach it).
func (c *cluster) converge() {
	c.t.Helper()
	want := c.nodes[c.leader()].AppliedIndex()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range c.nodes {
		for r != nil && r.AppliedIndex() < want {
			if time.Now().After(deadline) {
				c.t.Fatalf("%v applied %d, the leader %d", r, r.AppliedIndex(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// put writes through the current leader, retrying across elections.
func (c *cluster) put(key, value string) {
	c.t.Helper()
	for range 50 {
		err := c.nodes[c.leader()].Put(ctx(c.t), "", []byte(key), []byte(value))
		if err == nil {
			return
		}
		var nl *NotLeaderError
		if !errors.As(err, &nl) && !errors.Is(err, ErrUnknownOutcome) {
			c.t.Fatalf("put %s: %v", key, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("put %s: no leader accepted it", key)
}

// checkAll reads key on every running node (stale reads, after converge).
func (c *cluster) checkAll(family, key, want string) {
	c.t.Helper()
	for _, r := range c.nodes {
		if r == nil {
			continue
		}
		v, err := r.StaleGet(family, []byte(key))
		if want == "" {
			if !errors.Is(err, ErrNotFound) {
				c.t.Fatalf("%v: %s = %q, %v; want not found", r, key, v, err)
			}
			continue
		}
		if err != nil || string(v) != want {
			c.t.Fatalf("%v: %s = %q, %v; want %q", r, key, v, err, want)
		}
	}
}
