package base

import (
	"errors"
	"fmt"
)

// ErrCorruption marks every error caused by bad bytes on disk: a checksum
// mismatch, a truncated or undecodable structure, a violated invariant.
// Callers test for it with errors.Is; the wrapping error says which file,
// which offset and which check failed.
var ErrCorruption = errors.New("sieve: corruption")

// CorruptionErrorf returns an error that wraps ErrCorruption with a message
// formatted from format and args. Any %w verbs in format keep wrapping the
// errors they name. An argument that is itself a corruption error made here
// is formatted without its "sieve: corruption: " (the result says it once).
func CorruptionErrorf(format string, args ...any) error {
	cloned := false
	for i, a := range args {
		if c, ok := a.(*corruptionError); ok {
			if !cloned {
				args, cloned = append([]any(nil), args...), true
			}
			args[i] = corruptionDetail{c}
		}
	}
	return &corruptionError{err: fmt.Errorf(format, args...)}
}

// MarkCorruption wraps err so that errors.Is(result, ErrCorruption) holds,
// keeping err's own chain. A nil err stays nil.
func MarkCorruption(err error) error {
	if err == nil || errors.Is(err, ErrCorruption) {
		return err
	}
	return &corruptionError{err: err}
}

type corruptionError struct{ err error }

func (e *corruptionError) Error() string { return "sieve: corruption: " + e.err.Error() }

func (e *corruptionError) Unwrap() []error { return []error{ErrCorruption, e.err} }

// corruptionDetail is a corruption error nested in another one: its text
// without the marker, its chain whole.
type corruptionDetail struct{ c *corruptionError }

func (d corruptionDetail) Error() string { return d.c.err.Error() }

func (d corruptionDetail) Unwrap() error { return d.c }
