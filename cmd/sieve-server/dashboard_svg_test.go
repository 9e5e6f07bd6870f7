package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

var palette = []string{"#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#37872d", "#fade2a", "#c4162a", "#1f60c4", "#8f3bb8"}

// formatUnit renders v in the panel's unit (Grafana's names).
func formatUnit(v float64, unit string) string {
	switch unit {
	case "percentunit":
		return fmt.Sprintf("%.3g%%", 100*v)
	case "bytes", "Bps":
		suffix := map[string]string{"bytes": "B", "Bps": "B/s"}[unit]
		for _, p := range []struct {
			f float64
			s string
		}{{1 << 30, "Gi"}, {1 << 20, "Mi"}, {1 << 10, "Ki"}} {
			if math.Abs(v) >= p.f {
				return fmt.Sprintf("%.3g %s%s", v/p.f, p.s, suffix)
			}
		}
		return fmt.Sprintf("%.3g %s", v, suffix)
	case "s":
		switch {
		case v == 0:
			return "0"
		case v < 1e-3:
			return fmt.Sprintf("%.3g µs", v*1e6)
		case v < 1:
			return fmt.Sprintf("%.3g ms", v*1e3)
		}
		return fmt.Sprintf("%.3g s", v)
	}
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.3gK", v/1000)
	}
	return fmt.Sprintf("%.3g", v)
}

// svgChart draws the series as lines on shared axes, legend below.
func svgChart(ss []series, w, h int, unit string) string {
	legendRows := (len(ss) + 2) / 3
	plotH := float64(h - 22 - 16*legendRows)
	left, plotW := 70.0, float64(w)-80
	var tmax, vmax float64
	for _, s := range ss {
		for i := range s.t {
			tmax, vmax = math.Max(tmax, s.t[i]), math.Max(vmax, s.v[i])
		}
	}
	if vmax == 0 {
		vmax = 1
	}
	vmax *= 1.1
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" font-size="11" fill="#9fa7b3">`, w, h)
	for k := 0; k <= 4; k++ {
		y := 6 + plotH*float64(4-k)/4
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#2c3235"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`,
			left, left+plotW, y, y, left-6, y+4, html.EscapeString(formatUnit(vmax*float64(k)/4, unit)))
	}
	for k := 0; k <= 6 && tmax > 0; k++ {
		x := left + plotW*float64(k)/6
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%.0fs</text>`, x, 6+plotH+14, tmax*float64(k)/6)
	}
	for n, s := range ss {
		color := palette[n%len(palette)]
		var pts []string
		for i := range s.t {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+plotW*s.t[i]/tmax, 6+plotH*(1-s.v[i]/vmax)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, color, strings.Join(pts, " "))
		lx, ly := 10+float64(n%3)*float64(w-10)/3, 6+plotH+30+16*float64(n/3)
		name := s.name
		if len(name) > 38 {
			name = name[:37] + "…"
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/><text x="%.0f" y="%.0f" fill="#ccccdc">%s</text>`,
			lx, ly-4, color, lx+16, ly, html.EscapeString(name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
