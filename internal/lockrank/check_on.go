//go:build race || invariants

package lockrank

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Enabled reports whether ranks are checked (race or invariants builds).
const Enabled = true

// held maps a goroutine to the ranks it holds, in acquisition order, each
// with the stack that acquired it.
var (
	heldMu sync.Mutex
	held   = map[uint64][]acquisition{}
)

type acquisition struct {
	rank Rank
	pcs  []uintptr
}

// Acquire records that the calling goroutine takes a lock of rank r,
// panicking if it holds one of rank r or higher. Call it before blocking
// on the lock, so that an inversion is reported even where it would
// deadlock.
func Acquire(r Rank) {
	g := goid()
	heldMu.Lock()
	hs := held[g]
	for _, h := range hs {
		if h.rank >= r {
			heldMu.Unlock()
			panic(fmt.Sprintf("lockrank: acquiring %v (rank %d) while holding %v (rank %d)\n\n"+
				"%v acquired at:\n%s\n%v acquired at:\n%s",
				r, r, h.rank, h.rank, h.rank, formatPCs(h.pcs), r, currentStack()))
		}
	}
	pcs := make([]uintptr, 32)
	pcs = pcs[:runtime.Callers(3, pcs)]
	held[g] = append(hs, acquisition{rank: r, pcs: pcs})
	heldMu.Unlock()
}

// Release records that the calling goroutine let go of a lock of rank r.
// A release of a rank the goroutine does not hold (a lock handed between
// goroutines) panics: the order cannot be checked for such a lock.
func Release(r Rank) {
	g := goid()
	heldMu.Lock()
	defer heldMu.Unlock()
	hs := held[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].rank == r {
			hs = append(hs[:i], hs[i+1:]...)
			if len(hs) == 0 {
				delete(held, g)
			} else {
				held[g] = hs
			}
			return
		}
	}
	panic(fmt.Sprintf("lockrank: releasing %v, which this goroutine does not hold\n%s", r, currentStack()))
}

// Held reports whether the calling goroutine holds a lock of rank r.
func Held(r Rank) bool {
	g := goid()
	heldMu.Lock()
	defer heldMu.Unlock()
	for _, h := range held[g] {
		if h.rank == r {
			return true
		}
	}
	return false
}

// goid returns the calling goroutine's ID, parsed from the header of its
// stack trace ("goroutine 18 [running]:"). Slow (about a microsecond), as
// befits a check that runs only in race and invariants builds.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("lockrank: cannot parse goroutine ID from " + strconv.Quote(string(buf[:])))
	}
	return id
}

func currentStack() string {
	buf := make([]byte, 16<<10)
	return string(buf[:runtime.Stack(buf, false)])
}

func formatPCs(pcs []uintptr) string {
	var sb strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&sb, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	return sb.String()
}
