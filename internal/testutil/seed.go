// Package testutil holds helpers shared by sieve's tests.
package testutil

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Seed returns the seed for a randomized test and logs how to replay it:
// SIEVE_SEED=<n> go test -run <TestName> ./<pkg>/. Without SIEVE_SEED the
// seed is taken from the clock.
func Seed(t testing.TB) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("SIEVE_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad SIEVE_SEED %q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay: SIEVE_SEED=%d go test -run '^%s$')", seed, seed, t.Name())
	return seed
}
