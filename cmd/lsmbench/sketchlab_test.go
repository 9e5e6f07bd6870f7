package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSketchLab(t *testing.T) {
	out := t.TempDir()
	code, stdout, errs := runCLI(t, "sketches", "-n=100000", "-capacity=2000", "-probes=20000", "-out="+out, "-json", "-progress=off")
	require.Equal(t, 0, code, errs)
	var rep sketchLabReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, "sieve.lsmbench.sketches.v1", rep.Schema)

	require.Len(t, rep.Memory, 7)
	for _, r := range rep.Memory {
		require.Positive(t, r.Bytes, r.Structure)
	}
	exact, bloom, bitmap := rep.Memory[0], rep.Memory[2], rep.Memory[5]
	require.Greater(t, exact.BitsPerID, 8*16.0, "an exact set stores the IDs and more")
	require.InDelta(t, 9.585, bloom.BitsPerID, 0.01, "classic Bloom at 1%%")
	require.InDelta(t, 1, bitmap.BitsPerID, 1e-9)

	bs := rep.Bloom
	require.NotNil(t, bs)
	last := bs.Rows[len(bs.Rows)-1]
	require.Greater(t, last.SingleFPR, 0.5, "one filter at 8× capacity is mostly ones")
	require.Less(t, last.StackedFPR, 3*bs.Rate, "stacking keeps the rate bounded")
	require.Greater(t, last.Layers, 1)
	require.Greater(t, last.StackedBytes, last.SingleBytes)

	cl := rep.Cuckoo
	require.NotNil(t, cl)
	require.Greater(t, cl.FullAt, int64(1900))
	require.Zero(t, cl.AfterDeleteFalseNegatives)
	require.Less(t, cl.AfterDeleteLoad, cl.FullLoad)

	for _, f := range rep.Files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if len(f) > 4 && f[len(f)-4:] == ".svg" {
			requireWellFormedSVG(t, b)
		}
	}
}
