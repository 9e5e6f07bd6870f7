package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/replica"
	"github.com/sievedb/sieve/sketchcol"
)

// Cluster mode (-raft-id, -raft-peers): the server's DB is the state
// machine of a replica.Replica (hashicorp/raft), and every write goes
// through raft. See README.md, "Cluster mode".
//
// Replicated writes. A command runs on the leader as a transaction of its
// own: on a view of the keyspace (the one EXEC uses, keyspace.tx) whose
// writes go into an indexed batch, holding its keys' locks. The batch's
// records (sieve.Batch.Records: kind, column family by name, key, value,
// deadline) become one replica.Command, proposed with the term in which
// this leader has applied every earlier entry (Replica.LeaderTerm) as
// Command.Term: an entry that lands in another term is refused on every
// node, so no command computed from a stale state is ever applied. The
// reply, computed on the view, is sent only after the command is
// committed and applied on the leader; the keys' locks are held until
// then, so the next command on a key sees the last one's writes. A
// command that wrote nothing (a read, a SET NX on an existing key) checks
// that this node is still the leader of the term (VerifyTerm) before its
// reply: reads on the leader are linearizable.
//
// Every node (the leader included) applies the command's operations in
// the state machine, then the OnApply hook brings the in-memory state
// derived from the data up to date for the keys written: the Store's
// caches, the pages of paged strings, the HLL cache bytes
// (server-hllmeta) and the deadlines (server-expires) are reread from
// the DB; a snapshot restore reloads all of them.

// clusterFamily holds the client addresses of nodes added with
// SIEVE.RAFT ADD (raft ID → "host:port@raftport"), replicated.
const clusterFamily = "server-cluster"

// clusterNode is one node: its raft ID, client address and raft address.
type clusterNode struct {
	id, addr, raftAddr string
}

// clusterState is a cluster-mode server's raft node and what it knows of
// the others.
type clusterState struct {
	rep  *replica.Replica
	self clusterNode

	mu    sync.RWMutex
	nodes map[string]clusterNode // by raft ID: -raft-peers and server-cluster

	ks atomic.Pointer[keyspace] // set once the keyspace is open
	// restores counts the snapshots installed since the process started
	// (INFO replication's raft_snapshot_restores).
	restores atomic.Int64
	ready    chan struct{} // closed then (or when Open fails)
	once     sync.Once
}

// parseNode parses ID=HOST:PORT@RAFTPORT.
func parseNode(s string) (clusterNode, error) {
	id, rest, ok := strings.Cut(strings.TrimSpace(s), "=")
	addr, rport, ok2 := strings.Cut(rest, "@")
	if !ok || !ok2 || id == "" {
		return clusterNode{}, fmt.Errorf("peer %q: want ID=HOST:PORT@RAFTPORT", s)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return clusterNode{}, fmt.Errorf("peer %q: %w", s, err)
	}
	return clusterNode{id: id, addr: addr, raftAddr: net.JoinHostPort(host, rport)}, nil
}

// parsePeers parses -raft-peers.
func parsePeers(list string) ([]clusterNode, error) {
	var out []clusterNode
	seen := map[string]bool{}
	for _, p := range strings.Split(list, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		n, err := parseNode(p)
		if err != nil {
			return nil, err
		}
		if seen[n.id] {
			return nil, fmt.Errorf("peer %q given twice", n.id)
		}
		seen[n.id] = true
		out = append(out, n)
	}
	return out, nil
}

// serverFamilies are the options of the families whose writes merge,
// the same on every node (the state machine and its snapshots need them).
func serverFamilies() map[string]*sieve.ColumnFamilyOptions {
	return map[string]*sieve.ColumnFamilyOptions{
		sketchcol.ColumnFamilyName:      {Merger: sketchcol.Merger{}},
		sketchcol.PagesColumnFamilyName: {Merger: sketchcol.PageMerger{}, MaxSuccessiveMerges: -1},
	}
}

// openCluster starts the raft node and returns its state machine's DB.
func openCluster(cfg Config, opts *sieve.Options) (*clusterState, *sieve.DB, error) {
	peers, err := parsePeers(cfg.RaftPeers)
	if err != nil {
		return nil, nil, fmt.Errorf("-raft-peers: %w", err)
	}
	c := &clusterState{nodes: map[string]clusterNode{}, ready: make(chan struct{})}
	var rpeers []replica.Peer
	for _, p := range peers {
		c.nodes[p.id] = p
		rpeers = append(rpeers, replica.Peer{ID: p.id, Addr: p.raftAddr})
	}
	self, ok := c.nodes[cfg.RaftID]
	if !ok {
		return nil, nil, fmt.Errorf("-raft-id %q is not in -raft-peers", cfg.RaftID)
	}
	c.self = self
	if cfg.RaftJoin {
		rpeers = nil // added by the leader, never bootstrapped
	}
	dir := cfg.RaftDir
	if dir == "" {
		dir = filepath.Join(cfg.Dir, "raft")
	}
	c.rep, err = replica.Open(replica.Config{
		ID: cfg.RaftID, Dir: dir, Bind: self.raftAddr, Peers: rpeers,
		Options: opts, Families: serverFamilies(),
		OnApply: c.onApply, OnRestore: c.onRestore,
	})
	if err != nil {
		return nil, nil, err
	}
	return c, c.rep.DB(), nil
}

// start publishes the keyspace to the hooks (nil: Open failed).
func (c *clusterState) start(ks *keyspace) {
	if ks != nil {
		ks.replicated = true
		c.ks.Store(ks)
		c.loadNodes(ks)
	}
	c.once.Do(func() { close(c.ready) })
}

// keyspace waits for the keyspace (the hooks may run before Open has
// opened it); nil if Open failed.
func (c *clusterState) keyspace() *keyspace {
	<-c.ready
	return c.ks.Load()
}

// loadNodes reads the nodes added with SIEVE.RAFT ADD.
func (c *clusterState) loadNodes(ks *keyspace) {
	cf, err := ks.db.OpenColumnFamily(clusterFamily, nil)
	if err != nil {
		return
	}
	it := cf.NewIter(nil)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		c.noteNode(string(it.Key()), it.Value())
	}
}

// noteNode records node id's addresses (nil: removed).
func (c *clusterState) noteNode(id string, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v == nil {
		delete(c.nodes, id)
		return
	}
	if n, err := parseNode(id + "=" + string(v)); err == nil {
		c.nodes[id] = n
	}
}

// node returns what is known of node id.
func (c *clusterState) node(id string) (clusterNode, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[id]
	return n, ok
}

// onApply updates the in-memory state derived from the keys the applied
// commands wrote (see the comment at the top).
func (c *clusterState) onApply(cmds []*replica.Command) {
	ks := c.keyspace()
	if ks == nil {
		return
	}
	var keys [][]byte
	all := false
	for _, cmd := range cmds {
		for i := range cmd.Ops {
			op := &cmd.Ops[i]
			switch op.Family {
			case sketchcol.ColumnFamilyName:
				keys = append(keys, op.Key)
			case sketchcol.PagesColumnFamilyName:
				k, _, ok := sketchcol.PageOwner(op.Key)
				all = all || !ok || op.Kind == replica.OpDeleteRange
				keys = append(keys, k)
			case metaCFName:
				ks.reloadMeta([][]byte{op.Key})
			case expiresCFName:
				ks.reloadDeadline(op.Key)
			case clusterFamily:
				v, _ := ks.db.OpenColumnFamily(clusterFamily, nil)
				if val, err := v.Get(op.Key); err == nil {
					c.noteNode(string(op.Key), val)
				} else {
					c.noteNode(string(op.Key), nil)
				}
			}
		}
	}
	if all {
		ks.st.Invalidate(nil)
		ks.bits.clear()
		return
	}
	ks.st.Invalidate(keys)
	for _, k := range keys {
		ks.bits.drop(k)
	}
}

// onRestore reloads all of it after a snapshot replaced the data.
func (c *clusterState) onRestore() {
	c.restores.Add(1)
	ks := c.keyspace()
	if ks == nil {
		return
	}
	ks.st.Invalidate(nil)
	ks.bits.clear()
	ks.exp.clear()
	_ = ks.loadExpires()
	for i := range ks.stripes {
		st := &ks.stripes[i]
		st.metaMu.Lock()
		st.meta = metaSet{}
		st.metaMu.Unlock()
	}
	it := ks.meta.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Value()) == 8 {
			ks.noteMeta(it.Key(), [8]byte(it.Value()))
		}
	}
	_ = it.Close()
	c.loadNodes(ks)
}

// reloadDeadline rereads key's deadline from the DB.
func (ks *keyspace) reloadDeadline(key []byte) {
	v, err := ks.expCF.Get(key)
	if err == nil && len(v) == 8 {
		ks.exp.set(key, int64(beUint64(v)))
		return
	}
	ks.exp.set(key, 0)
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

// replicate proposes b's writes as one command conditional on term and
// waits until it is applied here. Errors: *replica.NotLeaderError
// (nothing proposed), errTermChanged (refused: nothing applied),
// replica.ErrUnknownOutcome.
func (c *clusterState) replicate(term uint64, b *sieve.Batch) error {
	cmd := &replica.Command{Term: term}
	err := b.Records(func(rec sieve.BatchRecord) error {
		op := replica.Op{Family: rec.Family, Key: rec.Key, Value: rec.Value, End: rec.End, Expiry: rec.Expiry}
		switch rec.Kind {
		case sieve.RecordPut:
			op.Kind = replica.OpPut
		case sieve.RecordDelete:
			op.Kind = replica.OpDelete
		case sieve.RecordMerge:
			op.Kind = replica.OpMerge
		case sieve.RecordDeleteRange:
			op.Kind = replica.OpDeleteRange
		}
		cmd.Ops = append(cmd.Ops, op)
		return nil
	})
	if err != nil {
		return err
	}
	// No deadline: the future ends when the entry is applied or this node
	// loses its office, so the keys' locks are never released while an
	// entry of this term that wrote them may still be applied.
	res, err := c.rep.Apply(context.Background(), cmd)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return fmt.Errorf("%w: %v", errTermChanged, res.Err)
	}
	return nil
}

var errTermChanged = errors.New("leadership changed before the write was committed; not applied")

// leaderAddr returns the leader's client address ("" when unknown).
func (c *clusterState) leaderAddr() string {
	id, _ := c.rep.Leader()
	if n, ok := c.node(id); ok {
		return n.addr
	}
	return ""
}

// clusterErr writes the reply for a failed replicated command or check.
func (s *Server) clusterErr(r *reply, args [][]byte, err error) {
	var nl *replica.NotLeaderError
	switch {
	case errors.As(err, &nl):
		s.moved(r, args)
	case errors.Is(err, errTermChanged):
		r.err("TRYAGAIN " + err.Error())
	case errors.Is(err, replica.ErrUnknownOutcome):
		r.err("ERR write outcome unknown (the leader lost its office): it may or may not be applied")
	default:
		r.storeErr(err)
	}
}

// moved answers -MOVED with the slot of the command's first key and the
// leader, or -CLUSTERDOWN when no leader is known.
func (s *Server) moved(r *reply, args [][]byte) {
	addr := s.cluster.leaderAddr()
	if addr == "" || addr == s.cluster.self.addr {
		r.err("CLUSTERDOWN no leader elected yet")
		return
	}
	slot := 0
	if len(args) > 1 {
		if c := lookupCommand(args[0]); c != nil {
			if keys := keyArgsOf(c.name, args); len(keys) > 0 {
				slot = keySlot(keys[0])
			}
		}
	}
	r.err(fmt.Sprintf("MOVED %d %s", slot, addr))
}

// clusterTimeout bounds the leader checks of one command.
const clusterTimeout = 10 * time.Second
