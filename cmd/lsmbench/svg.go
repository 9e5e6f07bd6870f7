package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// A small hand-written SVG line/scatter chart: enough for the labs' figures
// (a linear x axis, a linear or log10 y axis, lines, markers, reference
// lines, a legend) and nothing more. The output is standalone SVG 1.1 that
// a browser opens directly; every text is XML-escaped.

type chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	// XMin..YMax fix the axes; a zero-width range is computed from the
	// data (with YMin/YMax snapped to decades on a log axis).
	XMin, XMax, YMin, YMax float64
	// XFormat and YFormat format tick labels; default %g.
	XFormat, YFormat func(float64) string
	Series           []series
	VLines, HLines   []refLine
}

type series struct {
	Name   string
	Points []point
	Line   bool   // join the points
	Marker string // "circle", "square", "triangle", "diamond" or "" (none)
	Color  string
	Dashed bool
}

type point struct{ X, Y float64 }

type refLine struct {
	At    float64
	Label string
}

const (
	svgW, svgH                           = 880, 500
	padLeft, padRight, padTop, padBottom = 80, 280, 50, 60
	plotW, plotH                         = svgW - padLeft - padRight, svgH - padTop - padBottom
)

// palette is colour-blind-safe (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

// writeSVG renders the chart.
func (c *chart) writeSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c.fitAxes()
	x0, x1, y0, y1 := c.xt(c.XMin), c.xt(c.XMax), c.yt(c.YMin), c.yt(c.YMax)
	px := func(x float64) float64 { return padLeft + (c.xt(x)-x0)/(x1-x0)*plotW }
	py := func(y float64) float64 { return padTop + plotH - (c.yt(y)-y0)/(y1-y0)*plotH }

	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(bw, `<title>%s</title>`+"\n", esc(c.Title))
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(bw, `<defs><clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath></defs>`+"\n", padLeft, padTop, plotW, plotH)
	fmt.Fprintf(bw, `<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", padLeft, esc(c.Title))
	c.writeAxes(bw, px, py)
	for _, r := range c.VLines {
		if v := c.xt(r.At); v >= x0 && v <= x1 && (!c.LogX || r.At > 0) {
			x := px(r.At)
			fmt.Fprintf(bw, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-dasharray="6 4"/>`+"\n", x, padTop, x, padTop+plotH)
			fmt.Fprintf(bw, `<text x="%.1f" y="%d" fill="#555">%s</text>`+"\n", x+4, padTop+14, esc(r.Label))
		}
	}
	for _, r := range c.HLines {
		if v := c.yt(r.At); v >= y0 && v <= y1 && (!c.LogY || r.At > 0) {
			y := py(r.At)
			fmt.Fprintf(bw, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#555" stroke-dasharray="6 4"/>`+"\n", padLeft, y, padLeft+plotW, y)
			fmt.Fprintf(bw, `<text x="%d" y="%.1f" fill="#555" text-anchor="end">%s</text>`+"\n", padLeft+plotW-4, y-4, esc(r.Label))
		}
	}
	fmt.Fprintf(bw, `<g clip-path="url(#plot)">`+"\n")
	for i := range c.Series {
		c.writeSeries(bw, &c.Series[i], i, px, py)
	}
	fmt.Fprintf(bw, "</g>\n")
	c.writeLegend(bw)
	fmt.Fprintf(bw, "</svg>\n")
	return bw.Flush()
}

// xt and yt map a value to axis space: log10 on a log axis.
func (c *chart) xt(x float64) float64 { return axisT(x, c.LogX) }
func (c *chart) yt(y float64) float64 { return axisT(y, c.LogY) }

func axisT(v float64, log bool) float64 {
	if log {
		return math.Log10(v)
	}
	return v
}

// drawable reports whether p can be placed on the axes.
func (c *chart) drawable(p point) bool {
	ok := !math.IsNaN(p.X) && !math.IsNaN(p.Y) && !math.IsInf(p.X, 0) && !math.IsInf(p.Y, 0)
	return ok && (!c.LogY || p.Y > 0) && (!c.LogX || p.X > 0)
}

func (c *chart) fitAxes() {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if c.drawable(p) {
				xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
				ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
			}
		}
	}
	if math.IsInf(xmin, 0) { // nothing to draw
		xmin, xmax, ymin, ymax = 0.1, 1, 0.1, 1
		if !c.LogY {
			ymin = 0
		}
	}
	if c.XMin == c.XMax {
		c.XMin, c.XMax = xmin, xmax
		if c.LogX {
			c.XMin, c.XMax = math.Pow(10, math.Floor(math.Log10(xmin))), math.Pow(10, math.Ceil(math.Log10(xmax)))
		}
		if c.XMin == c.XMax {
			c.XMin, c.XMax = c.XMin-1, c.XMax+1
			if c.LogX {
				c.XMin, c.XMax = c.XMax/10, c.XMax*10
			}
		}
	}
	if c.YMin == c.YMax {
		c.YMin, c.YMax = ymin, ymax
		if c.LogY {
			c.YMin, c.YMax = math.Pow(10, math.Floor(math.Log10(ymin))), math.Pow(10, math.Ceil(math.Log10(ymax)))
		} else {
			lo, hi, _ := niceRange(math.Min(0, ymin), ymax)
			c.YMin, c.YMax = lo, hi
		}
		if c.YMin == c.YMax {
			c.YMin, c.YMax = c.YMin/10, c.YMax*10
			if !c.LogY {
				c.YMin, c.YMax = c.YMin-1, c.YMax+1
			}
		}
	}
}

// niceRange widens [lo, hi] to multiples of a 1-2-5 step giving about 6
// ticks.
func niceRange(lo, hi float64) (float64, float64, float64) {
	step := niceStep((hi - lo) / 6)
	if step == 0 {
		return lo, hi, 1
	}
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step, step
}

func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 0
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func (c *chart) writeAxes(w io.Writer, px, py func(float64) float64) {
	xf, yf := fmtOr(c.XFormat), fmtOr(c.YFormat)
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", padLeft, padTop, plotW, plotH)
	for _, t := range ticks(c.XMin, c.XMax, c.LogX) {
		X := px(t.v)
		stroke := "#e5e5e5"
		if !t.major {
			stroke = "#f3f3f3"
		}
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", X, padTop, X, padTop+plotH, stroke)
		if t.major {
			v := t.v
			if !c.LogX {
				v = cleanZero(v)
			}
			fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", X, padTop+plotH+18, esc(xf(v)))
		}
	}
	for _, t := range ticks(c.YMin, c.YMax, c.LogY) {
		Y := py(t.v)
		stroke := "#e5e5e5"
		if !t.major {
			stroke = "#f3f3f3"
		}
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", padLeft, Y, padLeft+plotW, Y, stroke)
		if t.major {
			v := t.v
			if !c.LogY {
				v = cleanZero(v)
			}
			fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, Y+4, esc(yf(v)))
		}
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padLeft+plotW/2, svgH-16, esc(c.XLabel))
	fmt.Fprintf(w, `<text transform="translate(20 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padTop+plotH/2, esc(c.YLabel))
}

type tick struct {
	v     float64
	major bool
}

// ticks returns the ticks of an axis over [lo, hi]: 1-2-5 steps on a
// linear axis; decades (major) and their multiples 2..9 (minor) on a log
// axis.
func ticks(lo, hi float64, log bool) []tick {
	var ts []tick
	if log {
		for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
			base := math.Pow(10, d)
			for m := 1.0; m < 10; m++ {
				if v := m * base; v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
					ts = append(ts, tick{v, m == 1})
				}
			}
		}
		return ts
	}
	_, _, step := niceRange(lo, hi)
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, tick{v, true})
	}
	return ts
}

func (c *chart) writeSeries(w io.Writer, s *series, i int, px, py func(float64) float64) {
	color := s.Color
	if color == "" {
		color = palette[i%len(palette)]
	}
	var pts []point
	for _, p := range s.Points {
		if c.drawable(p) {
			pts = append(pts, point{px(p.X), py(p.Y)})
		}
	}
	if s.Line && len(pts) > 1 {
		var b strings.Builder
		for _, p := range pts {
			fmt.Fprintf(&b, "%.1f,%.1f ", p.X, p.Y)
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.TrimSpace(b.String()), color, dash)
	}
	for _, p := range pts {
		writeMarker(w, s.Marker, p.X, p.Y, color)
	}
}

func writeMarker(w io.Writer, kind string, x, y float64, color string) {
	const r = 4.0
	switch kind {
	case "circle":
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="white"/>`+"\n", x, y, r, color)
	case "square":
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="white"/>`+"\n", x-r, y-r, 2*r, 2*r, color)
	case "triangle":
		fmt.Fprintf(w, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" stroke="white"/>`+"\n", x, y-r-1, x-r-1, y+r, x+r+1, y+r, color)
	case "diamond":
		fmt.Fprintf(w, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" stroke="white"/>`+"\n", x, y-r-1, x+r+1, y, x, y+r+1, x-r-1, y, color)
	}
}

func (c *chart) writeLegend(w io.Writer) {
	x, y := float64(padLeft+plotW+16), float64(padTop+10)
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		if s.Line {
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="5 3"`
			}
			fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", x, y, x+24, y, color, dash)
		}
		writeMarker(w, s.Marker, x+12, y, color)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+30, y+4, esc(s.Name))
		y += 20
	}
}

func fmtOr(f func(float64) string) func(float64) string {
	if f != nil {
		return f
	}
	return func(v float64) string { return fmt.Sprintf("%g", v) }
}

// cleanZero turns the -0 and 1e-17 that tick arithmetic produces into 0.
func cleanZero(v float64) float64 {
	if math.Abs(v) < 1e-12 {
		return 0
	}
	return v
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

func esc(s string) string { return xmlEscaper.Replace(s) }
