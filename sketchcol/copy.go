package sketchcol

import (
	"github.com/sievedb/sieve"
)

// CopyValue adds to b, a batch of the Store's DB (or the batch of a view,
// WithBatch), the writes that make dst hold a copy of src's value,
// whatever its kind: a paged filter's or sketch's pages, which live in
// their own column family, are copied with its header, and the pages dst
// kept for a paged value of its own are dropped. src's value is read as
// the Store reads it (operands applied). It reports false, and adds
// nothing, when src is missing. The caller applies b with Apply naming
// dst (and src, if it deletes src in the same batch: a rename), and
// excludes other writers of src and dst until then (sieve-server holds
// both keys' locks). A value that is not a sketch (a caller's own bytes)
// is copied as it is.
//
// The copy of a paged value is as large as the value (Dump's bytes are
// built in memory): a Bloom filter for 100M items at 1% takes 120 MB.
func (s *Store) CopyValue(b *sieve.Batch, src, dst []byte) (bool, error) {
	v, err := s.get(src)
	if err != nil || v == nil {
		return false, err
	}
	if err := s.dropPages(b, dst); err != nil {
		return false, err
	}
	switch v[0] {
	case kindPagedBloom, kindPagedCMS, kindPagedTopK, kindPagedCuckoo:
	default:
		s.invalidate(dst)
		return true, b.PutCF(s.cf, dst, v)
	}
	d, err := s.Dump(src)
	if err != nil {
		return false, err
	}
	// Restore on a view of b adds the header and the pages to b (and
	// drops dst's pages again, first: a no-op).
	return true, s.WithBatch(b).Restore(dst, d)
}
