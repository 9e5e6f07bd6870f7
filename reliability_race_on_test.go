//go:build race

package sieve

// relRaceEnabled makes the reliability suite sample under the race
// detector, which slows its exhaustive sweeps down tenfold.
const relRaceEnabled = true
