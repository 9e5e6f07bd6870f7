package vfs

import (
	"errors"
	"sync/atomic"
	"syscall"
)

// ErrInjected is wrapped by every error an ErrorFS makes up, so a test can
// tell injected failures from real ones with errors.Is.
var ErrInjected = errors.New("vfs: injected error")

// ErrorOptions configure an ErrorFS. The zero value counts every operation
// and injects nothing.
type ErrorOptions struct {
	// Ops are the kinds of operation that are counted and may fail; zero
	// means AllOps.
	Ops OpSet
	// Match, if set, further restricts the counted operations to those
	// for which it returns true (name is the path; the new name for
	// Rename; the file's name for File methods). It may be called
	// concurrently.
	Match func(op Op, name string) bool
	// Nth makes the Nth counted operation (1-based) fail; zero injects
	// nothing. A failed operation is not performed: nothing is written,
	// synced, created, renamed or removed.
	Nth int64
	// Persistent makes every counted operation after the Nth fail too
	// (a dead disk); otherwise only the Nth fails (a transient error).
	Persistent bool
	// Err is the error injected; nil means syscall.EIO. The returned
	// error wraps both ErrInjected and Err.
	Err error
	// SpaceLimit, if positive, is the number of bytes File.Write may write
	// in total through this FS. A Write that would pass it writes the
	// bytes that fit and returns them with an error wrapping
	// syscall.ENOSPC and ErrInjected; later writes write nothing and fail
	// the same way. Change it with SetSpaceLimit.
	SpaceLimit int64
}

// ErrorFS wraps an FS (and every File it opens) to count operations and make
// chosen ones fail. The usual pattern: run a workload once with a counting
// ErrorFS to learn Ops(), then run it again on fresh state with Nth set to
// each of 1..Ops() in turn.
//
// An ErrorFS is safe for concurrent use; with concurrent callers, which
// operation is the Nth depends on their interleaving.
type ErrorFS struct {
	wrapFS
	opts     ErrorOptions
	ops      atomic.Int64
	counts   [numOps]atomic.Int64
	injected atomic.Int64
	written  atomic.Int64
	limit    atomic.Int64
}

var _ FS = (*ErrorFS)(nil)

// NewErrorFS returns an ErrorFS over inner configured by opts.
func NewErrorFS(inner FS, opts ErrorOptions) *ErrorFS {
	if opts.Ops == 0 {
		opts.Ops = AllOps
	}
	if opts.Err == nil {
		opts.Err = syscall.EIO
	}
	e := &ErrorFS{opts: opts}
	e.wrapFS = wrapFS{inner: inner, ic: e}
	e.limit.Store(opts.SpaceLimit)
	return e
}

// Ops returns how many counted operations (those selected by Ops and
// Match) have been attempted, failed ones included.
func (e *ErrorFS) Ops() int64 { return e.ops.Load() }

// Count returns how many operations of kind op have been attempted, whether
// counted by Ops or not.
func (e *ErrorFS) Count(op Op) int64 {
	if op >= numOps {
		return 0
	}
	return e.counts[op].Load()
}

// Injected returns how many errors have been injected, ENOSPC included.
func (e *ErrorFS) Injected() int64 { return e.injected.Load() }

// Written returns how many bytes File.Write has let through.
func (e *ErrorFS) Written() int64 { return e.written.Load() }

// SetSpaceLimit changes the limit on the bytes written in total (Written
// included): raise it to "free space", zero or negative to lift it.
func (e *ErrorFS) SetSpaceLimit(limit int64) { e.limit.Store(limit) }

func (e *ErrorFS) before(op Op, name string) error {
	e.counts[op].Add(1)
	if !e.opts.Ops.Has(op) || e.opts.Match != nil && !e.opts.Match(op, name) {
		return nil
	}
	n := e.ops.Add(1)
	if nth := e.opts.Nth; nth > 0 && (n == nth || e.opts.Persistent && n > nth) {
		e.injected.Add(1)
		return injectedErr{e.opts.Err}
	}
	return nil
}

func (e *ErrorFS) reserve(_ string, n int) (int, error) {
	for {
		limit, w := e.limit.Load(), e.written.Load()
		k := int64(n)
		if limit > 0 {
			k = min(k, max(limit-w, 0))
		}
		if e.written.CompareAndSwap(w, w+k) {
			if k < int64(n) {
				e.injected.Add(1)
				return int(k), injectedErr{syscall.ENOSPC}
			}
			return n, nil
		}
	}
}

type injectedErr struct{ err error }

func (e injectedErr) Error() string   { return "injected: " + e.err.Error() }
func (e injectedErr) Unwrap() []error { return []error{ErrInjected, e.err} }
