package sstable

import (
	"errors"

	"github.com/sievedb/sieve/filter"
)

// errUnknownFilterType stands in for filter.ErrUnknownType until the filter
// package exports OpenBlock.
var errUnknownFilterType = errors.New("unknown filter type")

// openFilterBlock decodes a filter block whose policy is not among
// ReaderOptions.Policies, by the type byte inside it.
func openFilterBlock(data []byte) (filter.Reader, error) { return nil, errUnknownFilterType }

// isUnknownFilterType reports whether a filter decoding error means "this
// build does not know the filter's type" (read the table without its filter)
// rather than a malformed block (corruption).
func isUnknownFilterType(err error) bool { return errors.Is(err, errUnknownFilterType) }
