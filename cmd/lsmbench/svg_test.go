package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireWellFormedSVG parses doc as XML to the end and checks that its root
// is an <svg> element in the SVG namespace.
func requireWellFormedSVG(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	root := ""
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "SVG is not well-formed XML")
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				require.Empty(t, root, "one root element")
				root = e.Name.Local
				require.Equal(t, "http://www.w3.org/2000/svg", e.Name.Space)
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	require.Equal(t, "svg", root)
	require.Zero(t, depth)
}

func TestChartSVGIsWellFormed(t *testing.T) {
	c := &chart{
		Title: `FPR <vs> "bits" & k's`, XLabel: "bits/key", YLabel: "FPR", LogY: true, YFormat: fpct,
		Series: []series{
			{Name: "theory <line>", Points: []point{{1, 0.5}, {5, 0.1}, {10, 0.008}, {20, 0.0001}}, Line: true, Dashed: true},
			{Name: "measured & co", Points: []point{{1, 0.49}, {10, 0}, {12, math.NaN()}, {20, 0.00012}}, Marker: "circle"},
			{Name: "sq", Points: []point{{2, 0.3}}, Marker: "square"},
			{Name: "tri", Points: []point{{3, 0.2}}, Marker: "triangle"},
			{Name: "dia", Points: []point{{4, 0.1}}, Marker: "diamond"},
		},
		VLines: []refLine{{At: 6.93, Label: "k = (m/n)·ln 2"}},
		HLines: []refLine{{At: 0.01, Label: "1% <target>"}, {At: 0, Label: "not on a log axis"}},
	}
	var buf bytes.Buffer
	require.NoError(t, c.writeSVG(&buf))
	requireWellFormedSVG(t, buf.Bytes())
	s := buf.String()
	require.Contains(t, s, "FPR &lt;vs&gt; &quot;bits&quot; &amp; k&apos;s")
	require.Contains(t, s, "<polyline")
	require.Contains(t, s, ">1%<", "percent tick labels on the log axis")
	require.NotContains(t, s, "NaN")
	require.NotContains(t, s, "Inf")
}

func TestChartEdgeCases(t *testing.T) {
	for _, c := range []*chart{
		{Title: "empty"},
		{Title: "empty log", LogY: true},
		{Title: "one point", Series: []series{{Name: "p", Points: []point{{1, 1}}, Marker: "circle"}}},
		{Title: "all zero on log", LogY: true, Series: []series{{Name: "z", Points: []point{{1, 0}, {2, 0}}, Line: true}}},
		{Title: "flat", Series: []series{{Name: "f", Points: []point{{0, 3}, {5, 3}}, Line: true}}},
		{Title: "negative", Series: []series{{Name: "n", Points: []point{{-5, -3}, {5, 3}}, Line: true}}},
		{Title: "log x", LogX: true, Series: []series{{Name: "x", Points: []point{{0, 1}, {1, 2}, {1e6, 3}}, Line: true}},
			VLines: []refLine{{At: 0, Label: "not on a log axis"}, {At: 100, Label: "100"}}},
		{Title: "log x one point", LogX: true, Series: []series{{Name: "x", Points: []point{{50, 1}}, Marker: "circle"}}},
	} {
		var buf bytes.Buffer
		require.NoError(t, c.writeSVG(&buf), c.Title)
		requireWellFormedSVG(t, buf.Bytes())
		require.NotContains(t, buf.String(), "NaN", c.Title)
	}
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{0.7: 1, 1.3: 2, 3: 5, 7: 10, 0.013: 0.02, 420: 500} {
		require.InDelta(t, want, niceStep(raw), 1e-12, "%v", raw)
	}
	require.Zero(t, niceStep(0))
}
