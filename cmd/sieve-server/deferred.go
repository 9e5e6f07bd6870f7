package main

import (
	"github.com/sievedb/sieve/sketchcol"
	"github.com/tidwall/redcon"
)

// Pipelined writes. Over RESP every PFADD has a reply, and a client that
// pipelines sends many before reading any. The plain SETs and PFADDs of
// one pipeline (the commands redcon parsed from one read) are written as
// one batch, committed before any of their replies is sent: one WAL
// write (one fsync with -sync) per pipeline instead of one per command.
//
// Exactness: while a connection has writes pending it holds the locks of
// their keys, so no other command sees or writes those keys until the
// batch is committed (a reader of the DB sees the value before the
// batch, which is linearizable: the writes take effect at the commit,
// before their replies). A connection never blocks on a lock while
// holding any: when a lock it needs is taken it commits first (deadlock
// freedom), and every other command commits first too, so a GET after a
// SET in the same pipeline reads the SET. PFADD's replies come from
// sketchcol.Deferred (the cached registers plus the batch's operands).
// If the commit fails, the pending replies are replaced by the error.

// deferState is a connection's pending batch.
type deferState struct {
	d       *sketchcol.Deferred
	stripes []int
	all     bool
	kinds   map[string]byte // 's' SET, 'p' PFADD: keys written in the batch
	meta    [][]byte        // keys whose cache bytes changed in the batch
	replies int
	mark    int // the reply buffer's length before the first pending reply
}

// deferrable reports whether a command joins the pipeline's batch.
func (s *Server) deferrable(name string, args [][]byte) bool {
	if !s.cfg.BatchPipeline {
		return false
	}
	switch name {
	case "set":
		return len(args) == 3 && int64(len(args[2])) <= s.lim.maxBulk.Load()
	case "pfadd":
		return true
	}
	return false
}

// deferLock takes key's stripe for the batch: at once if free, else after
// committing what is pending (so that it waits holding nothing).
func (s *Server) deferLock(r *reply, key []byte) {
	ds := &r.cl.ds
	ks := s.ks
	i := ks.stripe(key)
	for _, h := range ds.stripes {
		if h == i {
			return
		}
	}
	if !ds.all {
		if !ks.all.TryRLock() {
			s.commitDeferred(r)
			ks.all.RLock()
		}
		ds.all = true
	}
	if !ks.stripes[i].TryLock() {
		s.commitDeferred(r)
		if !ds.all {
			ks.all.RLock()
			ds.all = true
		}
		ks.stripes[i].Lock()
	}
	ds.stripes = append(ds.stripes, i)
}

// beginReply notes where the pending replies start.
func (s *Server) beginReply(r *reply) {
	ds := &r.cl.ds
	if ds.replies == 0 {
		ds.mark = len(redcon.BaseWriter(r.Conn).Buffer())
	}
	ds.replies++
}

func (s *Server) deferred(r *reply) *sketchcol.Deferred {
	ds := &r.cl.ds
	if ds.d == nil {
		ds.d = s.ks.st.NewDeferred(s.ks.db.NewBatch())
		ds.kinds = map[string]byte{}
	}
	return ds.d
}

// commitDeferred commits the connection's batch and releases its locks.
func (s *Server) commitDeferred(r *reply) {
	ds := &r.cl.ds
	if ds.d != nil && (ds.d.Pending() || ds.replies > 0) {
		if err := ds.d.Commit(); err != nil {
			w := redcon.BaseWriter(r.Conn)
			buf := w.Buffer()
			w.SetBuffer(buf[:min(ds.mark, len(buf))])
			for range ds.replies {
				w.WriteError("ERR " + err.Error())
			}
			s.ks.reloadMeta(ds.meta)
		}
		clear(ds.kinds)
	}
	for _, i := range ds.stripes {
		s.ks.stripes[i].Unlock()
	}
	if ds.all {
		s.ks.all.RUnlock()
	}
	ds.stripes, ds.all, ds.replies, ds.meta = ds.stripes[:0], false, 0, ds.meta[:0]
}

func cmdSetDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	ds := &r.cl.ds
	d := s.deferred(r)
	if ds.kinds[string(key)] == 'p' {
		s.commitDeferred(r)
	}
	s.deferLock(r, key)
	b := d.Batch()
	_ = b.PutCF(s.ks.cf, key, encodeString(args[2]))
	if s.ks.dropMeta(b, key) {
		s.ks.forgetMeta(key)
		ds.meta = append(ds.meta, key)
	}
	d.Wrote(key)
	ds.kinds[string(key)] = 's'
	s.beginReply(r)
	r.ok()
}

func cmdPFAddDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	ds := &r.cl.ds
	d := s.deferred(r)
	if ds.kinds[string(key)] == 's' {
		s.commitDeferred(r)
	}
	s.deferLock(r, key)
	c, hasMeta := s.ks.metaOf(key)
	stale := hasMeta && c[7]&0x80 != 0
	changed, created, err := d.PFAdd(key, args[2:]...)
	if err != nil {
		s.commitDeferred(r) // the error reply is not a pending one
		if !s.hllTypeErr(r, key) {
			r.hllErr(err)
		}
		return
	}
	ds.kinds[string(key)] = 'p'
	if changed && !stale {
		if !hasMeta && !created {
			// The cache bytes Redis would show before this PFADD: those of
			// the stored value (the batch is not applied yet).
			if before, err := s.ks.raw(key); err == nil && len(before) >= hllHdrLen {
				copy(c[:], before[8:16])
			}
		}
		c[7] |= 0x80
		_ = d.Batch().PutCF(s.ks.meta, key, c[:])
		s.ks.noteMeta(key, c)
		ds.meta = append(ds.meta, key)
	}
	s.beginReply(r)
	r.boolInt(changed)
}
