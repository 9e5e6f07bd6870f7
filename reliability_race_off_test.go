//go:build !race

package sieve

const relRaceEnabled = false
