//go:build race

package sketchcol

// raceEnabled shortens the long-running tests under the race detector,
// which slows the hashing loops tenfold without finding anything there.
const raceEnabled = true
