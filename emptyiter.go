package sieve

import "github.com/sievedb/sieve/internal/base"

// emptyIter is an InternalIterator with no entries.
type emptyIter struct{ err error }

func (e emptyIter) First() bool           { return false }
func (e emptyIter) Last() bool            { return false }
func (e emptyIter) SeekGE([]byte) bool    { return false }
func (e emptyIter) SeekLT([]byte) bool    { return false }
func (e emptyIter) Next() bool            { return false }
func (e emptyIter) Prev() bool            { return false }
func (e emptyIter) Key() base.InternalKey { return base.InternalKey{} }
func (e emptyIter) Value() []byte         { return nil }
func (e emptyIter) Error() error          { return e.err }
func (e emptyIter) Close() error          { return e.err }
