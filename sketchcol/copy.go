package sketchcol

import (
	"errors"

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
	// Every read comes before the first write to b, so that a failed read
	// leaves b as it was (a transaction's batch goes on).
	g := s.cf.Get
	if s.view != nil {
		g = s.viewGet
	}
	v, err := g(src) // as it is: a value that is no sketch is copied too
	switch {
	case errors.Is(err, sieve.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case len(v) == 0:
		return true, b.PutCF(s.cf, dst, v)
	}
	paged := false
	switch v[0] {
	case kindPagedBloom, kindPagedCMS, kindPagedTopK, kindPagedCuckoo:
		paged = true
		if v, err = s.Dump(src); err != nil {
			return false, err
		}
	}
	if err := s.dropPages(b, dst); err != nil {
		return false, err
	}
	if !paged {
		s.invalidate(dst)
		return true, b.PutCF(s.cf, dst, v)
	}
	// Restore on a view of b adds the header and the pages to b (and
	// drops dst's pages again, first: a no-op).
	return true, s.WithBatch(b).Restore(dst, v)
}
