package replica

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
)

// linCluster is the linearizability test's cluster: three nodes on
// raft.InmemTransport whose links the nemesis cuts and heals, whose nodes
// it crashes (transport cut first, then Close: nothing more leaves the
// node, every write it acknowledged was synced) and restarts from their
// disks. Unlike cluster, it is safe for concurrent use by clients and the
// nemesis, and never calls t.Fatal from their goroutines.
type linCluster struct {
	t     *testing.T
	root  string
	peers []Peer

	mu     sync.Mutex
	nodes  []*Replica
	trans  []*raft.InmemTransport
	cut    [][]bool        // cut[i][j]: i cannot send to j
	paused []chan struct{} // non-nil while node i is paused: clients wait on it
	arm    []*atomic.Bool  // fail node i's next snapshot restore part way
	fses   []*vfs.ErrorFS

	restores        atomic.Int64 // snapshot restores by node instances now closed
	restoreCrashes  atomic.Int64 // restores failed part way by the injected error
	restoresAtStart atomic.Int64 // interrupted restores redone by Open
}

func newLinCluster(t *testing.T) *linCluster {
	const n = 3
	c := &linCluster{t: t, root: t.TempDir(), nodes: make([]*Replica, n), trans: make([]*raft.InmemTransport, n),
		paused: make([]chan struct{}, n), fses: make([]*vfs.ErrorFS, n)}
	for i := range n {
		c.peers = append(c.peers, Peer{ID: fmt.Sprintf("n%d", i), Addr: fmt.Sprintf("addr%d", i)})
		c.cut = append(c.cut, make([]bool, n))
		c.arm = append(c.arm, new(atomic.Bool))
	}
	for i := range n {
		if err := c.start(i); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range n {
			c.crash(i)
		}
	})
	return c
}

// restoreFS wraps the disk for node i's state machine DB: while arm[i] is
// set, a snapshot restore's ingest of its second staged table fails (the
// first family already replaced, the others and the applied index not),
// which stops the node as a crash at that point would.
func (c *linCluster) restoreFS(i int) *vfs.ErrorFS {
	var mu sync.Mutex
	first := ""
	match := func(op vfs.Op, name string) bool {
		if op != vfs.OpOpen || !strings.Contains(name, "restore-tmp") || !c.arm[i].Load() {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if first == "" || first == name {
			first = name
			return false
		}
		c.arm[i].Store(false)
		return true
	}
	return vfs.NewErrorFS(vfs.Default, vfs.ErrorOptions{Ops: vfs.OpsOf(vfs.OpOpen), Match: match, Nth: 1})
}

// start opens node i from its disk (bootstrapping on the first start).
func (c *linCluster) start(i int) error {
	fs := c.restoreFS(i)
	_, tr := raft.NewInmemTransport(raft.ServerAddress(c.peers[i].Addr))
	rc := fastRaft()
	rc.TrailingLogs = 20
	r, err := Open(Config{
		ID: c.peers[i].ID, Dir: filepath.Join(c.root, c.peers[i].ID), Peers: c.peers,
		Transport: tr, Raft: rc, Options: &sieve.Options{FS: fs},
		Families: map[string]*sieve.ColumnFamilyOptions{"counters": {Merger: counter{}}},
	})
	if err != nil {
		tr.Close()
		return fmt.Errorf("open n%d: %w", i, err)
	}
	c.restoresAtStart.Add(r.fsm.restores.Load())
	c.mu.Lock()
	c.nodes[i], c.trans[i], c.fses[i] = r, tr, fs
	c.wireLocked()
	c.mu.Unlock()
	return nil
}

// crash cuts node i off and closes it (no-op when it is down).
func (c *linCluster) crash(i int) {
	c.mu.Lock()
	r, tr := c.nodes[i], c.trans[i]
	c.nodes[i], c.trans[i] = nil, nil
	c.wireLocked()
	c.mu.Unlock()
	if r == nil {
		return
	}
	tr.Close()
	r.Close() // a node stopped by a failed restore reports it; ignored
	c.restores.Add(r.fsm.restores.Load())
}

// wireLocked makes the transports' routes match cut and the running nodes.
func (c *linCluster) wireLocked() {
	for i, ti := range c.trans {
		for j, tj := range c.trans {
			if ti == nil || i == j {
				continue
			}
			if tj == nil || c.cut[i][j] {
				ti.Disconnect(raft.ServerAddress(c.peers[j].Addr))
			} else {
				ti.Connect(raft.ServerAddress(c.peers[j].Addr), tj)
			}
		}
	}
}

// setLinks cuts (or heals) the links between a and b, both ways.
func (c *linCluster) setLinks(a, b int, cut bool) {
	c.mu.Lock()
	c.cut[a][b], c.cut[b][a] = cut, cut
	c.wireLocked()
	c.mu.Unlock()
}

// isolate cuts (or heals) every link of node i.
func (c *linCluster) isolate(i int, cut bool) {
	for j := range c.nodes {
		if j != i {
			c.setLinks(i, j, cut)
		}
	}
}

// pause freezes node i for clients (they wait) and the others (its links
// are cut) until resume.
func (c *linCluster) pause(i int) {
	c.mu.Lock()
	c.paused[i] = make(chan struct{})
	c.mu.Unlock()
	c.isolate(i, true)
}

func (c *linCluster) resume(i int) {
	c.isolate(i, false)
	c.mu.Lock()
	close(c.paused[i])
	c.paused[i] = nil
	c.mu.Unlock()
}

// node returns node i and the channel to wait on while it is paused (nil:
// not paused); a nil node is down.
func (c *linCluster) node(i int) (*Replica, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i], c.paused[i]
}

// leader returns a running node that believes it leads, or -1.
func (c *linCluster) leader() int {
	for i := range c.nodes {
		if r, _ := c.node(i); r != nil && r.IsLeader() {
			return i
		}
	}
	return -1
}

// waitLeader waits up to d for a leader.
func (c *linCluster) waitLeader(d time.Duration) int {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l := c.leader(); l >= 0 {
			return l
		}
	}
	return -1
}

// snapshotInstalls is every snapshot restore so far, at open included.
func (c *linCluster) snapshotInstalls() int64 {
	n := c.restores.Load()
	for i := range c.nodes {
		if r, _ := c.node(i); r != nil {
			n += r.fsm.restores.Load()
		}
	}
	return n
}
