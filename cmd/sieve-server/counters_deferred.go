package main

import (
	"errors"

	"github.com/sievedb/sieve/sketchcol"
)

// CMS.INCRBY, TOPK.ADD and TOPK.INCRBY in the pipeline's batch (see
// deferred.go): their replies come from sketchcol.Deferred, which applies
// the batch's earlier writes to the key's header and pages. Anything but
// a valid command on a paged sketch (bad arguments, a missing key,
// another type, a sketch stored whole, an error) runs as the plain
// command after the batch is committed, which answers as it would alone.

// splitIncrements splits "item increment [item increment ...]"; ok false
// when the count is odd or an increment does not parse (the plain
// command answers those).
func splitIncrements(args [][]byte) (items [][]byte, incrs []int64, ok bool) {
	if len(args)%2 != 0 {
		return nil, nil, false
	}
	items = make([][]byte, 0, len(args)/2)
	incrs = make([]int64, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		n, ok := parseInt(args[i+1])
		if !ok {
			return nil, nil, false
		}
		items, incrs = append(items, args[i]), append(incrs, n)
	}
	return items, incrs, true
}

// counterDeferred is deferred, after committing a batch grown past half
// its room (a command's writes are not known before it runs: one of many
// items writes many page operands).
func (s *Server) counterDeferred(r *reply) *sketchcol.Deferred {
	if d := r.cl.ds.d; d != nil && d.Batch().Size() > batchRoom/2 {
		s.commitDeferred(r)
	}
	return s.deferred(r)
}

func cmdCMSIncrByDeferred(s *Server, r *reply, args [][]byte) {
	items, incrs, ok := splitIncrements(args[2:])
	if !ok {
		s.commitDeferred(r)
		cmdCMSIncrBy(s, r, args)
		return
	}
	key := args[1]
	d := s.counterDeferred(r)
	s.deferKey(r, key, 'm')
	est, err := d.CMSIncrBy(key, items, incrs)
	if err != nil && !errors.Is(err, sketchcol.ErrCMSIncrByOverflow) {
		s.commitDeferred(r)
		cmdCMSIncrBy(s, r, args)
		return
	}
	r.cl.ds.touched = append(r.cl.ds.touched, key)
	s.beginReply(r)
	if err != nil { // the increments are written, as the plain command's
		r.counterErr(err)
		return
	}
	r.int64s(est)
}

func cmdTopKAddDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	d := s.counterDeferred(r)
	s.deferKey(r, key, 'k')
	out, err := d.TopKAdd(key, args[2:]...)
	if err != nil {
		s.commitDeferred(r)
		cmdTopKAdd(s, r, args)
		return
	}
	r.cl.ds.touched = append(r.cl.ds.touched, key)
	s.beginReply(r)
	r.expelled(out)
}

func cmdTopKIncrByDeferred(s *Server, r *reply, args [][]byte) {
	items, incrs, ok := splitIncrements(args[2:])
	if !ok {
		s.commitDeferred(r)
		cmdTopKIncrBy(s, r, args)
		return
	}
	key := args[1]
	d := s.counterDeferred(r)
	s.deferKey(r, key, 'k')
	out, err := d.TopKIncrBy(key, items, incrs)
	if err != nil {
		s.commitDeferred(r)
		cmdTopKIncrBy(s, r, args)
		return
	}
	r.cl.ds.touched = append(r.cl.ds.touched, key)
	s.beginReply(r)
	r.expelled(out)
}

// deferredCounterCmd returns the deferred variant of a Count-Min or
// Top-K write (nil for any other command).
func deferredCounterCmd(name string) func(*Server, *reply, [][]byte) {
	switch name {
	case "cms.incrby":
		return cmdCMSIncrByDeferred
	case "topk.add":
		return cmdTopKAddDeferred
	case "topk.incrby":
		return cmdTopKIncrByDeferred
	}
	return nil
}
