package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Number formatting shared by the reports.

// humanBytes formats n with binary units: 512B, 4.0KiB, 116.3MiB.
func humanBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%dB", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= 1024
		if math.Abs(f) < 1024 || u == "TiB" {
			return fmt.Sprintf("%.1f%s", f, u)
		}
	}
	panic("unreachable")
}

// commas formats n with thousands separators: 1,000,000.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// pct formats a rate as a percentage with enough digits to be read at any
// magnitude: 44.2%, 0.82%, 0.0195%, 0%.
func pct(r float64) string {
	switch p := 100 * r; {
	case p == 0:
		return "0%"
	case math.Abs(p) >= 10:
		return fmt.Sprintf("%.1f%%", p)
	case math.Abs(p) >= 0.1:
		return fmt.Sprintf("%.2f%%", p)
	default:
		return strconv.FormatFloat(p, 'g', 3, 64) + "%"
	}
}

// micros formats microseconds with three significant digits or more.
func micros(us float64) string {
	switch {
	case us >= 1000:
		return fmt.Sprintf("%.0f", us)
	case us >= 100:
		return fmt.Sprintf("%.1f", us)
	case us >= 10:
		return fmt.Sprintf("%.2f", us)
	}
	return fmt.Sprintf("%.3f", us)
}

// seconds formats a duration in seconds: 0.123s, 12.3s.
func seconds(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.3fs", s)
	}
	return fmt.Sprintf("%.1fs", s)
}
