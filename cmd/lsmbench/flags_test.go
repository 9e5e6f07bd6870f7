package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCountAndSize(t *testing.T) {
	counts := map[string]int{"0": 0, "20000": 20000, "20k": 20000, "1M": 1_000_000, "1_000_000": 1_000_000, "1e6": 1_000_000, "2.5k": 2500}
	for s, want := range counts {
		got, err := parseCount(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "x", "1.5", "-3", "1kk", "NaN"} {
		_, err := parseCount(s)
		require.Error(t, err, s)
	}
	sizes := map[string]int64{"4096": 4096, "64KiB": 64 << 10, "8MiB": 8 << 20, "1GiB": 1 << 30, "8M": 8 << 20, "16kb": 16 << 10, "100B": 100, "0": 0}
	for s, want := range sizes {
		got, err := parseSize(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "MiB", "-1", "1TiBB", "lots"} {
		_, err := parseSize(s)
		require.Error(t, err, s)
	}
}
