package lockrank

import (
	"strings"
	"sync"
	"testing"
)

// TestInversionPanics: taking a lower rank while holding a higher one
// panics the first time, with both acquisitions' stacks, in checking
// builds (go test -race, or -tags invariants).
func TestInversionPanics(t *testing.T) {
	if !Enabled {
		t.Skip("rank checks run under -race or -tags invariants")
	}
	var db, version Mutex
	db.Init(DB)
	version.Init(Version)
	version.Lock()
	db.Lock() // in order
	db.Unlock()
	version.Unlock()

	msg := func() (msg string) {
		defer func() { msg, _ = recover().(string) }()
		db.Lock()
		defer db.Unlock()
		version.Lock() // inversion
		version.Unlock()
		return ""
	}()
	if !strings.Contains(msg, "acquiring Version (rank 4) while holding DB (rank 5)") ||
		!strings.Contains(msg, "TestInversionPanics") {
		t.Fatalf("no inversion report; got %q", msg)
	}
	if Held(Version) || Held(DB) {
		t.Fatal("ranks still recorded as held after the unwinding")
	}
}

// TestSameRankTwicePanics: a second lock of the same rank (two stripes,
// say) is an inversion too unless the code defines an order among them.
func TestSameRankTwicePanics(t *testing.T) {
	if !Enabled {
		t.Skip("rank checks run under -race or -tags invariants")
	}
	var a, b Mutex
	a.Init(SketchKey)
	b.Init(SketchKey)
	a.Lock()
	defer a.Unlock()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	b.Lock()
}

// TestPerGoroutine: ranks are tracked per goroutine; another goroutine's
// locks do not constrain this one.
func TestPerGoroutine(t *testing.T) {
	var db, version RWMutex
	db.Init(DB)
	version.Init(Version)
	db.RLock()
	var wg sync.WaitGroup
	wg.Go(func() {
		version.Lock()
		version.Unlock()
	})
	wg.Wait()
	db.RUnlock()
	if Enabled && Held(DB) {
		t.Fatal("DB still held")
	}
}
