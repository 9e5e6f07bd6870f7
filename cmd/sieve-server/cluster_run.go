package main

import (
	"context"
	"time"
)

// clusterLocal are the commands a cluster-mode node answers itself, on
// any node, outside the replicated path: connection, server and cluster
// commands, and the keyless reads (SCAN, KEYS, DBSIZE, RANDOMKEY read
// this node's state, as a READONLY read does). EXEC replicates its
// transaction itself (execClustered).
var clusterLocal = map[string]bool{
	"cluster": true, "readonly": true, "readwrite": true, "asking": true, "sieve.raft": true,
	"role": true, "info": true, "ping": true, "echo": true, "hello": true, "auth": true,
	"client": true, "config": true, "command": true, "select": true, "quit": true, "time": true,
	"wait": true, "function": true, "debug": true, "monitor": true, "save": true, "bgsave": true,
	"lastsave": true, "shutdown": true, "memory": true, "dbsize": true, "scan": true, "keys": true,
	"randomkey": true, "multi": true, "exec": true, "discard": true, "watch": true, "unwatch": true,
	"reset": true,
}

// clustered reports whether a command runs on the replicated path: in
// cluster mode, outside a transaction's view, a write or a read of keys.
func (s *Server) clustered(c *command, args [][]byte) bool {
	if s.cluster == nil || s.ks.tx != nil || clusterLocal[c.name] {
		return false
	}
	return c.write || len(keyArgsOf(c.name, args)) > 0
}

// redirect answers -MOVED for a command a follower does not serve: a
// write, or a read of keys from a client that did not send READONLY.
func (s *Server) redirect(r *reply, c *command, args [][]byte) bool {
	if clusterLocal[c.name] || s.cluster.rep.IsLeader() {
		return false
	}
	if !c.write && (r.cl.readonly || len(keyArgsOf(c.name, args)) == 0) {
		return false
	}
	s.moved(r, args)
	return true
}

// runClustered runs a command on the replicated path: on the leader, as
// a transaction of its own whose writes are replicated before the reply
// (a command that wrote nothing checks leadership instead); on a
// follower (a READONLY read), on a view whose batch is dropped, so that
// a read that writes (PFCOUNT's cache bytes, a key's expiry) changes
// nothing here.
func (s *Server) runClustered(r *reply, c *command, args [][]byte) {
	leader := s.cluster.rep.IsLeader()
	if !leader && c.write {
		s.moved(r, args)
		return
	}
	mark := len(r.out)
	keys := keyArgsOf(c.name, args)
	err := s.inView(leader, keys, func(v *Server) {
		for _, k := range keys {
			_ = v.ks.expireIfNeeded(k)
		}
		c.fn(v, r, args)
		v.afterWrite(c, args)
	})
	if err != nil {
		r.out = r.out[:mark]
		s.clusterErr(r, args, err)
	}
}

// inView runs fn on a transaction view of the keyspace holding keys'
// locks (nil: the whole keyspace), then on the leader replicates the
// view's batch and waits for it to be applied (or, if fn wrote nothing,
// checks that this node still leads the term the view was read in). On
// a follower the batch is dropped.
func (s *Server) inView(leader bool, keys [][]byte, fn func(v *Server)) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	var term uint64
	if leader {
		var err error
		if term, err = s.cluster.rep.LeaderTerm(ctx); err != nil {
			return err
		}
	}
	var unlock func()
	if len(keys) == 0 {
		unlock = s.ks.lockAll()
	} else {
		unlock = s.ks.lockKeys(keys)
	}
	defer unlock()
	t := &txn{b: s.db.NewIndexedBatch()}
	view := &Server{serverState: s.serverState, ks: &keyspace{ksState: s.ks.ksState, st: s.ks.st.WithBatch(t.b), tx: t}}
	fn(view)
	return s.finishView(ctx, leader, term, t)
}

// finishView replicates a view's batch (see inView). REQUIRES: the locks
// of the keys the view wrote.
func (s *Server) finishView(ctx context.Context, leader bool, term uint64, t *txn) error {
	stale := t.keys // the Store's cache entries the view may have filled
	if t.flushed {
		stale = nil
	}
	defer s.ks.st.Invalidate(stale)
	if !leader {
		return nil
	}
	if t.b.Empty() {
		return s.cluster.rep.VerifyTerm(ctx, term)
	}
	if err := t.b.Err(); err != nil {
		return err
	}
	if err := s.cluster.replicate(term, t.b); err != nil {
		return err
	}
	for _, k := range t.keys {
		s.ks.watch.touch(k)
	}
	return nil
}

// execClustered is EXEC in cluster mode: the transaction runs on the
// leader's view and its batch is replicated as one command.
func (s *Server) execClustered(r *reply, m *multiState) {
	if !s.cluster.rep.IsLeader() {
		s.moved(r, nil)
		return
	}
	mark := len(r.out)
	dirty := false
	err := s.inView(true, nil, func(v *Server) {
		if dirty = m.dirty.Load(); dirty {
			return
		}
		r.array(len(m.queue))
		for _, q := range m.queue {
			v.runQueued(r, q)
		}
	})
	switch {
	case err != nil:
		r.out = r.out[:mark]
		s.clusterErr(r, nil, err)
	case dirty:
		r.WriteNullArray()
	}
}

// runClusterSweeper deletes, on the leader, the keys whose deadline has
// come, each deletion replicated (followers do not sweep: their reads
// hide such keys, and the leader's deletions reach them).
func (s *Server) runClusterSweeper(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if !s.cluster.rep.IsLeader() {
				continue
			}
			for _, k := range s.ks.exp.due(200) {
				_ = s.inView(true, [][]byte{k}, func(v *Server) { _ = v.ks.expireIfNeeded(k) })
			}
		}
	}
}
