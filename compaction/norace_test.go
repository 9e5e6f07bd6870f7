//go:build !race

package compaction

const raceEnabled = false
