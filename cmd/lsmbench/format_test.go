package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNumberFormats(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		require.Equal(t, want, commas(n))
	}
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 8 << 20: "8.0MiB", 3 << 30: "3.0GiB", 5 << 40: "5.0TiB"} {
		require.Equal(t, want, humanBytes(n))
	}
	for r, want := range map[float64]string{0: "0%", 0.436: "43.6%", 0.0082: "0.82%", 0.000195: "0.0195%", 1: "100.0%"} {
		require.Equal(t, want, pct(r))
	}
	for us, want := range map[float64]string{0.2345: "0.234", 12.345: "12.35", 123.45: "123.5", 4567.8: "4568"} {
		require.Equal(t, want, micros(us))
	}
	require.Equal(t, "1%", fpct(0.01))
	require.Equal(t, "0.1%", fpct(0.001))
	require.Equal(t, "1.234s", seconds(1.2345))
	require.Equal(t, "12.3s", seconds(12.34))
}
