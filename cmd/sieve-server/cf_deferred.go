package main

// cmdCFAddDeferred is CF.ADD and CF.ADDNX in the pipeline's batch
// (sketchcol.Deferred.CFAdd: exact replies from the filter's header and
// pages with the batch's earlier adds applied). The batch is committed
// first when it holds cuckoo filters of another of the Store's stripes
// (Deferred.CFJoins) or is large. A key the Deferred leaves alone
// (another type, a filter stored whole or at the most sub-filters, a
// full filter, an error) runs as a plain command after the batch is
// committed, which answers as it would alone.
func cmdCFAddDeferred(s *Server, r *reply, args [][]byte) {
	key := args[1]
	ds := &r.cl.ds
	if ds.d != nil && (!ds.d.CFJoins(key) || ds.d.Batch().Size() > batchRoom) {
		s.commitDeferred(r)
	}
	d := s.deferred(r)
	s.deferKey(r, key, 'c')
	add := d.CFAdd
	if eq(args[0], "cf.addnx") {
		add = d.CFAddNX
	}
	ok, err := add(key, args[2])
	if err != nil {
		s.commitDeferred(r)
		cmdCFAdd(s, r, args)
		return
	}
	ds.touched = append(ds.touched, key)
	s.beginReply(r)
	r.boolInt(ok)
}
