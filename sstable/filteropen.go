package sstable

import (
	"errors"

	"github.com/sievedb/sieve/filter"
)

// openFilterBlock decodes a filter block whose policy is not among
// ReaderOptions.Policies, by the format code inside it.
func openFilterBlock(data []byte) (filter.Reader, error) { return filter.OpenBlock(data) }

// isUnknownFilterType reports whether a filter decoding error means "this
// build does not know the filter's type" (read the table without its filter)
// rather than a malformed block (corruption).
func isUnknownFilterType(err error) bool { return errors.Is(err, filter.ErrUnknownType) }

// decodeFilter returns a reader for a filter block written by the policy
// named name: by that policy if it is among policies, else (or if the block
// turns out to be of another known type) by the block's own format code.
func decodeFilter(data []byte, name string, policies []filter.Policy) (filter.Reader, error) {
	for _, p := range policies {
		if p != nil && p.Name() == name {
			fr, err := p.NewReader(data)
			if err == nil || !errors.Is(err, filter.ErrTypeMismatch) {
				return fr, err
			}
			break
		}
	}
	return openFilterBlock(data)
}
