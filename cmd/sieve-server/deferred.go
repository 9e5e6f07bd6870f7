package main

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/internal/prefetch"
	"github.com/sievedb/sieve/sketchcol"
)

// Pipelined writes. Over RESP every PFADD has a reply, and a client that
// pipelines sends many before reading any. The plain SETs and PFADDs of
// one pipeline (the commands parsed from one read) are written as
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
	keys    []pendKey // the keys written in the batch
	touched [][]byte  // the keys it changed (WATCH marks them at the commit)
	scratch []byte    // a SET's stored value, being encoded
	meta    [][]byte  // keys whose cache bytes changed in the batch
	replies int
	mark    int // the reply buffer's length before the first pending reply
	// prefetched: prefetchStripes ran for the pipeline (reset at its end,
	// afterCommand, not at every commit: a pipeline of SETs and GETs
	// commits at every GET, and would rescan its rest each time).
	prefetched bool
	pf         [][]byte // prefetchStripes' PFADD keys (scratch)
}

// deferrable reports whether a command joins the pipeline's batch.
func (s *Server) deferrable(name string, args [][]byte) bool {
	if !s.cfg.BatchPipeline || s.cluster != nil || (len(args) > 1 && s.ks.exp.nexp.Load() != 0 && s.ks.deadline(args[1]) != 0) {
		return false // a key with a deadline takes the plain path (expires.go)
	}
	switch name {
	case "set":
		return len(args) == 3 && int64(len(args[2])) <= s.lim.maxBulk.Load() && fitsEngine(args[1], len(args[2])+1)
	case "pfadd", "bf.add", "cf.add", "cf.addnx":
		return fitsEngine(args[1], 0)
	case "cms.incrby", "topk.add", "topk.incrby":
		return fitsEngine(args[1], 0)
	}
	return false
}

// fitsEngine reports whether a write of key with a value of vlen bytes is
// within the engine's limits. A command that is not is run alone, where
// its error reply is its own: in the pipeline's batch it would fail the
// batch and with it its neighbours.
func fitsEngine(key []byte, vlen int) bool { return checkSize(key, vlen) == nil }

// batchRoom is how many bytes the pipeline's batch may reach before it is
// committed and a new one started (the engine refuses batches over
// sieve.MaxBatchSize).
const batchRoom = sieve.MaxBatchSize / 2

// pendKey is a key written in the pending batch, by a SET ('s') or a
// PFADD ('p').
type pendKey struct {
	stripe int
	kind   byte
	key    []byte
}

// prefetchStripes asks the CPU, once per pipeline, for the stripe of
// every key of the commands pipelined after the current one, and for the
// Store's cached registers of every PFADD's key: those of a pipeline's
// random keys are cache misses, and prefetches issued back to back
// overlap (internal/prefetch) where the locking and lookups that follow,
// key by key, would wait for them one at a time.
func (s *Server) prefetchStripes(r *reply) {
	ds := &r.cl.ds
	if ds.prefetched {
		return
	}
	ds.prefetched = true
	ds.pf = ds.pf[:0]
	for _, c := range r.PeekPipeline() {
		if len(c.Args) >= 2 {
			prefetch.Object(unsafe.Pointer(&s.ks.stripes[s.ks.stripe(c.Args[1])]), unsafe.Sizeof(ksStripe{}))
			if len(c.Args[0]) == 5 && eq(c.Args[0], "pfadd") {
				ds.pf = append(ds.pf, c.Args[1])
			}
		}
	}
	s.ks.st.PrefetchKeys(ds.pf) // the Store's cached registers
	clear(ds.pf)
}

// deferKey readies key for a deferred command of kind ('s' or 'p'): if the
// batch wrote key by the other kind it is committed first (a PFADD's
// registers come from the cache, a SET's value from the batch), then the
// key's stripe is taken.
func (s *Server) deferKey(r *reply, key []byte, kind byte) {
	ds := &r.cl.ds
	s.prefetchStripes(r)
	i := s.ks.stripe(key)
	if slices.Contains(ds.stripes, i) {
		for _, k := range ds.keys {
			if k.stripe == i && k.kind != kind && bytes.Equal(k.key, key) {
				s.commitDeferred(r)
				break
			}
		}
	}
	s.deferLock(r, i)
	ds.keys = append(ds.keys, pendKey{stripe: i, kind: kind, key: key})
}

// deferLock takes stripe i for the batch: at once if free, else after
// committing what is pending (so that it waits holding nothing).
func (s *Server) deferLock(r *reply, i int) {
	ds := &r.cl.ds
	ks := s.ks
	if slices.Contains(ds.stripes, i) {
		return
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
		ds.mark = len(r.out)
	}
	ds.replies++
}

func (s *Server) deferred(r *reply) *sketchcol.Deferred {
	ds := &r.cl.ds
	if ds.d == nil {
		ds.d = s.ks.st.NewDeferred(s.ks.db.NewBatch())
	}
	return ds.d
}

// commitDeferred commits the connection's batch and releases its locks.
func (s *Server) commitDeferred(r *reply) {
	ds := &r.cl.ds
	if ds.d != nil && (ds.d.Pending() || ds.replies > 0) {
		if err := ds.d.Commit(); err != nil {
			r.out = r.out[:min(ds.mark, len(r.out))]
			for range ds.replies {
				r.WriteError("ERR " + err.Error())
			}
			s.ks.reloadMeta(ds.meta)
		}
	}
	for _, k := range ds.touched {
		s.ks.watch.touch(k)
	}
	clear(ds.touched)
	ds.touched = ds.touched[:0]
	for _, i := range ds.stripes {
		s.ks.stripes[i].Unlock()
	}
	if ds.all {
		s.ks.all.RUnlock()
	}
	clear(ds.keys) // drop the references to the requests
	clear(ds.meta)
	ds.stripes, ds.all, ds.replies, ds.meta, ds.keys = ds.stripes[:0], false, 0, ds.meta[:0], ds.keys[:0]
}

func cmdSetDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	ds := &r.cl.ds
	if ds.d != nil && ds.d.Batch().Size()+len(key)+len(args[2])+64 > batchRoom {
		s.commitDeferred(r)
	}
	d := s.deferred(r)
	s.deferKey(r, key, 's')
	b := d.Batch()
	// appendString returns an HLL's bytes as they are: args[2] itself, a
	// slice of the connection's read buffer, which scratch must not keep
	// (the next SET would append into that buffer).
	v := appendString(ds.scratch[:0], args[2])
	if !isHLLString(args[2]) {
		ds.scratch = v
	}
	if err := b.PutCF(s.ks.cf, key, v); err != nil { // PutCF copies v
		// Not reached (deferrable checked the sizes): the batch is
		// poisoned, and the commit answers every pending reply with the
		// error, which is true (none is applied).
		s.beginReply(r)
		s.commitDeferred(r)
		return
	}
	if s.ks.dropMeta(b, key) {
		s.ks.forgetMeta(key)
		ds.meta = append(ds.meta, key)
	}
	d.Wrote(key)
	ds.touched = append(ds.touched, key)
	s.beginReply(r)
	r.ok()
}

func cmdPFAddDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	d := s.deferred(r)
	s.deferKey(r, key, 'p')
	changed, created, marked, err := d.PFAddMarked(key, args[2:]...)
	if err != nil {
		s.commitDeferred(r) // the error reply is not a pending one
		if !s.hllTypeErr(r, key) {
			r.hllErr(err)
		}
		return
	}
	if changed && !marked { // marked: an earlier PFADD made them stale
		s.markStale(r, key, created)
	}
	if changed {
		r.cl.ds.touched = append(r.cl.ds.touched, key)
	}
	s.beginReply(r)
	r.boolInt(changed)
}

// markStale makes the Redis cache bytes of key, an HLL the pending batch
// changes, stale (top bit set) if they are not already: the batch writes
// them, GET shows them. REQUIRES: key's stripe held for the batch.
func (s *Server) markStale(r *reply, key []byte, created bool) {
	c, hasMeta := s.ks.metaOf(key)
	if !hasMeta || c[7]&0x80 == 0 {
		if !hasMeta && !created {
			// The cache bytes Redis would show before this PFADD: those of
			// the stored value (the batch is not applied yet).
			if before, err := s.ks.raw(key); err == nil && len(before) >= hllHdrLen {
				copy(c[:], before[8:16])
			}
		}
		c[7] |= 0x80
		ds := &r.cl.ds
		_ = ds.d.Batch().PutCF(s.ks.meta, key, c[:])
		s.ks.noteMeta(key, c)
		ds.meta = append(ds.meta, key)
	}
}

// cmdBFAddDeferred is BF.ADD in the pipeline's batch. A key the Deferred
// cannot add to (another type, a filter stored whole, a full filter, an
// error) runs as a plain BF.ADD after the batch is committed, which
// answers as it would alone.
func cmdBFAddDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	d := s.deferred(r)
	s.deferKey(r, key, 'b')
	added, err := d.BFAdd(key, args[2])
	if err != nil {
		s.commitDeferred(r)
		cmdBFAdd(s, r, args)
		return
	}
	r.cl.ds.touched = append(r.cl.ds.touched, key)
	s.beginReply(r)
	r.boolInt(added[0])
}
