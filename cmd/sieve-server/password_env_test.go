package main

import "testing"

// TestReviewEmptyEnvClearsPassword: an empty SIEVE_REQUIREPASS does not
// clear -requirepass.
func TestReviewEmptyEnvClearsPassword(t *testing.T) {
	t.Setenv("SIEVE_REQUIREPASS", "")
	cfg := DefaultConfig()
	cfg.RequirePass = "secret"
	if err := readPassword(&cfg, ""); err != nil {
		t.Fatal(err)
	}
	if cfg.RequirePass != "secret" {
		t.Errorf("-requirepass secret with SIEVE_REQUIREPASS set but empty: password is %q", cfg.RequirePass)
	}
}
