package sketchcol

import (
	"errors"

	"github.com/sievedb/sieve/internal/base"
)

// Errors of the sketch column family. Callers test them with errors.Is.
var (
	// ErrWrongType is returned for a command on a key that holds another
	// kind of sketch, like Redis's WRONGTYPE reply.
	ErrWrongType = errors.New("sketchcol: WRONGTYPE operation against a key holding the wrong kind of value")
	// ErrFilterFull is returned when an item cannot be added: a
	// non-scaling Bloom filter at capacity, or a cuckoo filter whose
	// sub-filters are full and that may not (or can no longer) grow.
	ErrFilterFull = errors.New("sketchcol: filter is full")
	// ErrInvalidArgument wraps every rejected parameter (error rate,
	// capacity, expansion, bucket size, max iterations).
	ErrInvalidArgument = errors.New("sketchcol: invalid argument")
	// ErrCorruption is the engine's corruption marker: malformed values
	// and operands return errors wrapping it.
	ErrCorruption = base.ErrCorruption
)

// corruptf returns an error wrapping ErrCorruption. Every decoder in this
// package reports malformed bytes through it.
func corruptf(format string, args ...any) error {
	return base.CorruptionErrorf("sketchcol: "+format, args...)
}
