package main

import (
	"testing"

	"github.com/tidwall/redcon"
)

// TestRedconNeedsTheGuard records why the guard exists: redcon's parser,
// given a bulk length near MaxInt, overflows its bounds check and panics
// (index out of range), which in a server goroutine kills the process. If
// a redcon upgrade fixes it, this test says so (the guard stays for the
// limits).
func TestRedconNeedsTheGuard(t *testing.T) {
	panicked := func() (p any) {
		defer func() { p = recover() }()
		_, _ = redcon.Parse([]byte("*1\r\n$9223372036854775806\r\nab"))
		return nil
	}()
	if panicked == nil {
		t.Log("redcon.Parse no longer panics on a bulk length near MaxInt")
		return
	}
	t.Logf("redcon.Parse panics without the guard: %v", panicked)
}
