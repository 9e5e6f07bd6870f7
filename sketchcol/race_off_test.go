//go:build !race

package sketchcol

const raceEnabled = false
