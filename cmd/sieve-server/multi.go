package main

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sievedb/sieve"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis's
// semantics.
//
// Between MULTI and EXEC a client's commands are checked (name, arity)
// and queued, each answered +QUEUED; one refused at queue time makes EXEC
// answer EXECABORT and run nothing. EXEC takes the keyspace exclusively,
// answers a null array if a key the client WATCHed was written since
// WATCH (by anyone, the client included), and otherwise runs the queue on
// a view of the keyspace whose reads see the transaction's own writes and
// whose writes go into one indexed batch (sketchcol.Store.WithBatch),
// applied at the end as one WAL record: after a crash all of the
// transaction's writes are present or none. A command that fails inside
// EXEC answers its error in EXEC's array and writes nothing, as in Redis;
// if the batch itself cannot be applied, EXEC answers that error and
// nothing of the transaction is applied.
//
// WATCH: a command marks the clients watching a key when it writes the
// key, holding the key's lock (keyspace.modified, Redis's
// signalModifiedKey): the keyspace's write methods do, PFADD when a
// register rose, a pipelined batch when it commits, FLUSHALL for the
// watched keys that existed; RedisBloom's commands whenever they open a
// key to write (keyspace.lockWrite), as a module's key does.
//
// Limitation: SCAN, KEYS, DBSIZE and RANDOMKEY inside a transaction list
// the database as it was before the transaction, without its own writes.

// queued is a command queued by MULTI.
type queued struct {
	c    *command
	args [][]byte // copies: the request buffer is reused
}

// multiState is a client's transaction state. Only its connection's
// goroutine touches it, except dirty (set by other clients' writes).
type multiState struct {
	on      bool
	aborted bool // a command was refused at queue time: EXECABORT
	queue   []queued
	watched [][]byte
	dirty   atomic.Bool
}

// multiOK are the commands MULTI runs at once instead of queueing.
var multiOK = map[string]bool{"exec": true, "discard": true, "multi": true, "watch": true, "quit": true, "reset": true}

func init() {
	register(
		&command{name: "multi", arity: 1, fn: cmdMulti},
		&command{name: "exec", arity: 1, fn: cmdExec},
		&command{name: "discard", arity: 1, fn: cmdDiscard},
		&command{name: "watch", arity: -2, fn: cmdWatch},
		&command{name: "unwatch", arity: 1, fn: cmdUnwatch},
	)
}

// queue queues a command of a client in MULTI, or refuses it (and marks
// the transaction aborted) when it is unknown or has the wrong arity.
func (s *Server) queue(r *reply, c *command, args [][]byte) {
	m := &r.cl.multi
	switch {
	case c == nil:
		m.aborted = true
		r.err(unknownCommand(args))
	case (c.arity > 0 && len(args) != c.arity) || (c.arity < 0 && len(args) < -c.arity):
		m.aborted = true
		r.wrongArgs(c.name)
	default:
		cp := make([][]byte, len(args))
		for i, a := range args {
			cp[i] = bytes.Clone(a)
		}
		m.queue = append(m.queue, queued{c: c, args: cp})
		r.status("QUEUED")
	}
}

func cmdMulti(s *Server, r *reply, _ [][]byte) {
	m := &r.cl.multi
	if m.on {
		r.err("ERR MULTI calls can not be nested")
		return
	}
	m.on = true
	r.ok()
}

func cmdDiscard(s *Server, r *reply, _ [][]byte) {
	if !r.cl.multi.on {
		r.err("ERR DISCARD without MULTI")
		return
	}
	s.endMulti(r.cl)
	r.ok()
}

// endMulti leaves MULTI and drops the client's WATCHes.
func (s *Server) endMulti(cl *client) {
	m := &cl.multi
	clear(m.queue)
	m.on, m.aborted, m.queue = false, false, m.queue[:0]
	s.ks.watch.unwatch(cl)
}

func cmdWatch(s *Server, r *reply, args [][]byte) {
	if r.cl.multi.on {
		r.err("ERR WATCH inside MULTI is not allowed")
		return
	}
	for _, k := range args[1:] {
		s.ks.watch.add(r.cl, k)
	}
	r.ok()
}

func cmdUnwatch(s *Server, r *reply, _ [][]byte) {
	s.ks.watch.unwatch(r.cl)
	r.ok()
}

func cmdExec(s *Server, r *reply, _ [][]byte) {
	cl := r.cl
	m := &cl.multi
	if !m.on {
		r.err("ERR EXEC without MULTI")
		return
	}
	defer s.endMulti(cl)
	if m.aborted {
		r.err("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if s.cluster != nil {
		s.execClustered(r, m)
		return
	}
	s.ks.all.Lock()
	defer s.ks.all.Unlock()
	if m.dirty.Load() {
		r.WriteNullArray()
		return
	}
	t := &txn{b: s.db.NewIndexedBatch()}
	view := &Server{serverState: s.serverState, ks: &keyspace{ksState: s.ks.ksState, st: s.ks.st.WithBatch(t.b), tx: t}}
	mark := len(r.out)
	r.array(len(m.queue))
	for _, q := range m.queue {
		view.runQueued(r, q)
	}
	keys := t.keys // the Store's cache entries to make stale
	if t.flushed {
		keys = nil // all of them
	}
	if err := s.ks.st.Apply(t.b, keys); err != nil {
		r.out = r.out[:mark]
		r.err("ERR transaction not applied: " + err.Error())
		return // the in-memory cache bytes were never changed
	}
	s.ks.applyTxMeta(t)
	s.ks.applyTxExpires(t)
	for _, k := range t.keys {
		s.ks.watch.touch(k)
	}
}

// runQueued runs one queued command of EXEC on the transaction's view. A
// key over the engine's limit is refused here: in the batch, its write
// would fail the whole transaction.
func (s *Server) runQueued(r *reply, q queued) {
	if len(q.args) > 1 && len(q.args[1]) > sieve.MaxKeySize {
		r.err(fmt.Sprintf("ERR key of %d bytes exceeds sieve's limit of %d", len(q.args[1]), sieve.MaxKeySize))
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.err(fmt.Sprintf("ERR internal error in '%s': %v", q.c.name, p))
		}
	}()
	s.run(r, q.c, q.args) // counted and shown to monitors, as Redis does in EXEC
}

// txn is what a transaction's keyspace view collects: its batch, the keys
// it modified (to mark their watchers at the end), and the HLL cache bytes
// it changed, kept here until the batch is applied (lock-free readers of
// the keyspace's copy must not see them before), with whether FLUSHALL
// cleared them all.
type txn struct {
	b         *sieve.Batch
	keys      [][]byte
	meta      map[string]*[8]byte // nil: deleted
	metaOrder []string
	flushed   bool             // FLUSHALL ran
	exp       map[string]int64 // deadlines set (0: removed), published at EXEC
}

func (t *txn) wrote(key []byte) { t.keys = append(t.keys, key) }

// pendMeta records key's cache bytes (nil: none) as the transaction left
// them.
func (t *txn) pendMeta(key []byte, c *[8]byte) {
	if t.meta == nil {
		t.meta = map[string]*[8]byte{}
	}
	if _, ok := t.meta[string(key)]; !ok {
		t.metaOrder = append(t.metaOrder, string(key))
	}
	t.meta[string(key)] = c
}

// metaOf returns key's cache bytes as the transaction left them; pending
// false when it did not touch them (read the keyspace's). A nil txn (no
// transaction) touched nothing.
func (t *txn) metaOf(key []byte) (c [8]byte, ok, pending bool) {
	if t == nil {
		return c, false, false
	}
	if p, touched := t.meta[string(key)]; touched {
		if p == nil {
			return c, false, true
		}
		return *p, true, true
	}
	if t.flushed {
		return c, false, true
	}
	return c, false, false
}

// applyTxMeta makes a transaction's cache bytes the keyspace's, once its
// batch is applied. REQUIRES: the keyspace exclusively.
func (ks *keyspace) applyTxMeta(t *txn) {
	if t.flushed {
		for i := range ks.stripes {
			st := &ks.stripes[i]
			st.metaMu.Lock()
			st.meta = metaSet{}
			st.metaMu.Unlock()
		}
	}
	for _, k := range t.metaOrder {
		if c := t.meta[k]; c != nil {
			ks.noteMeta([]byte(k), *c)
		} else {
			ks.forgetMeta([]byte(k))
		}
	}
}

// flush is FLUSHALL inside a transaction: it deletes, in the batch, every
// key of the database and every key the transaction wrote before it.
func (t *txn) flush(ks *keyspace) error {
	t.flushed = true
	for _, cf := range []*sieve.ColumnFamily{ks.cf, ks.meta, ks.expCF} {
		it := cf.NewIter(nil)
		for ok := it.First(); ok; ok = it.Next() {
			_ = t.b.DeleteCF(cf, it.Key())
		}
		if err := it.Close(); err != nil {
			return err
		}
		for _, k := range t.keys {
			_ = t.b.DeleteCF(cf, k)
		}
	}
	_ = ks.st.DropAllPages(t.b)
	t.meta, t.metaOrder = nil, nil // every key's cache bytes are gone
	t.exp = nil
	return t.b.Err()
}

// watchers is WATCH's registry: the clients watching each key. mu is a
// leaf of the lock order: taken holding a key's stripe (touch) or
// nothing, never while taking another lock.
type watchers struct {
	n  atomic.Int64 // registrations: touch skips the lock when 0
	mu sync.Mutex
	m  map[string]map[*client]struct{}
}

func (w *watchers) add(cl *client, key []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]map[*client]struct{}{}
	}
	set := w.m[string(key)]
	if set == nil {
		set = map[*client]struct{}{}
		w.m[string(key)] = set
	}
	if _, ok := set[cl]; ok {
		return
	}
	set[cl] = struct{}{}
	cl.multi.watched = append(cl.multi.watched, bytes.Clone(key))
	w.n.Add(1)
}

// unwatch drops every WATCH of cl and clears its dirty mark.
func (w *watchers) unwatch(cl *client) {
	m := &cl.multi
	if len(m.watched) > 0 {
		w.mu.Lock()
		for _, k := range m.watched {
			if set := w.m[string(k)]; set != nil {
				delete(set, cl)
				if len(set) == 0 {
					delete(w.m, string(k))
				}
				w.n.Add(-1)
			}
		}
		w.mu.Unlock()
	}
	clear(m.watched)
	m.watched = m.watched[:0]
	m.dirty.Store(false)
}

// touch marks the clients watching key.
func (w *watchers) touch(key []byte) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	for cl := range w.m[string(key)] {
		cl.multi.dirty.Store(true)
	}
	w.mu.Unlock()
}

// keys returns the watched keys (FLUSHALL marks those that exist).
func (w *watchers) keys() [][]byte {
	if w.n.Load() == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([][]byte, 0, len(w.m))
	for k := range w.m {
		out = append(out, []byte(k))
	}
	return out
}
