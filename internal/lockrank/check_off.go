//go:build !race && !invariants

package lockrank

// Enabled reports whether ranks are checked (race or invariants builds).
const Enabled = false

// Acquire records that the calling goroutine takes a lock of rank r
// (checking builds; a no-op here). Call it before blocking on the lock.
func Acquire(r Rank) {}

// Release records that the calling goroutine let go of a lock of rank r.
func Release(r Rank) {}

// Held reports whether the calling goroutine holds a lock of rank r
// (always false when checks are off).
func Held(r Rank) bool { return false }
