package vfs

import (
	"sync"
	"sync/atomic"
)

// SkipSyncFS wraps an FS (and its Files) to turn one sync into a silent
// no-op: the Nth call (1-based) of File.Sync or SyncDir, counted together,
// returns nil without syncing. It exists for mutation testing of crash
// tests: skipping any one fsync the engine needs must make its crash test
// fail. Run the workload once with n = 0 (skip nothing) to learn Syncs(),
// then once for each n in 1..Syncs().
//
// A SkipSyncFS is safe for concurrent use.
type SkipSyncFS struct {
	wrapFS
	n     int64
	syncs atomic.Int64

	mu      sync.Mutex
	skipped bool
	op      Op
	name    string
}

var _ FS = (*SkipSyncFS)(nil)

// NewSkipSyncFS returns a SkipSyncFS over inner that skips the nth sync; n
// of zero skips none.
func NewSkipSyncFS(inner FS, n int64) *SkipSyncFS {
	s := &SkipSyncFS{n: n}
	s.wrapFS = wrapFS{inner: inner, ic: s}
	return s
}

// Syncs returns how many File.Sync and SyncDir calls have been made.
func (s *SkipSyncFS) Syncs() int64 { return s.syncs.Load() }

// Skipped reports which sync was skipped (OpSync with the file's name, or
// OpSyncDir with the directory), if any has been yet; for test messages.
func (s *SkipSyncFS) Skipped() (op Op, name string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.op, s.name, s.skipped
}

func (s *SkipSyncFS) before(op Op, name string) error {
	if !SyncOps.Has(op) || s.syncs.Add(1) != s.n {
		return nil
	}
	s.mu.Lock()
	s.skipped, s.op, s.name = true, op, name
	s.mu.Unlock()
	return errSkip
}

func (s *SkipSyncFS) reserve(_ string, n int) (int, error) { return n, nil }
