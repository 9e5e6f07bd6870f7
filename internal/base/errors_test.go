package base

import (
	"errors"
	"fmt"
	"testing"
)

// A corruption error wrapping another says "sieve: corruption" once and
// keeps the inner error's chain.
func TestCorruptionErrorfNested(t *testing.T) {
	cause := errors.New("cause")
	inner := CorruptionErrorf("range-deletion block: fragment 0: %w", cause)
	outer := CorruptionErrorf("sstable: table 000012.sst: range-deletion block at offset 20: %w", inner)
	const want = "sieve: corruption: sstable: table 000012.sst: range-deletion block at offset 20: range-deletion block: fragment 0: cause"
	if got := outer.Error(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if !errors.Is(outer, ErrCorruption) || !errors.Is(outer, inner) || !errors.Is(outer, cause) {
		t.Fatalf("%v lost its chain", outer)
	}
	wrapped := fmt.Errorf("get: %w", outer)
	if !errors.Is(wrapped, cause) {
		t.Fatalf("%v lost its chain", wrapped)
	}
}
