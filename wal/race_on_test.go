//go:build race

package wal

// raceEnabled lets the slowest exhaustive tests sample instead of covering
// every case under the race detector, which slows them tenfold.
const raceEnabled = true
