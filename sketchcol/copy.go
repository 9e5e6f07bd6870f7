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
	if v[0] == kindStrHeader {
		return true, s.copyStrPages(b, v, src, dst)
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

// copyStrPages adds to b the copy of a paged string: its header hdr and
// its pages, read from the DB (not through a view's batch: sieve-server
// refuses the copy inside a transaction).
func (s *Store) copyStrPages(b *sieve.Batch, hdr, src, dst []byte) error {
	start, end := StrPageRange(src)
	type page struct{ k, v []byte }
	var pages []page
	it := s.pages.NewIter(&sieve.IterOptions{LowerBound: start, UpperBound: end})
	srcPre := len(start) - 1 // uvarint(len(src)) | src
	dstPre := pagePrefix(dst)
	for ok := it.First(); ok; ok = it.Next() {
		k := append(append([]byte{}, dstPre...), it.Key()[srcPre:]...)
		pages = append(pages, page{k, append([]byte{}, it.Value()...)})
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := s.dropPages(b, dst); err != nil {
		return err
	}
	s.invalidate(dst)
	if err := b.PutCF(s.cf, dst, hdr); err != nil {
		return err
	}
	for _, p := range pages {
		if err := b.PutCF(s.pages, p.k, p.v); err != nil {
			return err
		}
	}
	return nil
}
