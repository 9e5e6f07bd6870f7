package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSketchLab(t *testing.T) {
	out := t.TempDir()
	code, stdout, errs := runCLI(t, "sketches", "-n=100000", "-capacity=2000", "-probes=20000", "-hll_max=100000", "-hll_trials=8",
		"-out="+out, "-json", "-progress=off")
	require.Equal(t, 0, code, errs)
	var rep sketchLabReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, "sieve.lsmbench.sketches.v1", rep.Schema)

	checkLabMemory(t, &rep)
	checkLabBloom(t, &rep)
	checkLabCuckoo(t, &rep)
	checkLabHLL(t, &rep)
	checkLabStore(t, &rep)
	checkLabCounters(t, &rep)
	checkLabFiles(t, &rep)
}

// checkLabMemory: the memory table of the structures.
func checkLabMemory(t *testing.T, rep *sketchLabReport) {
	require.Len(t, rep.Memory, 7)
	for _, r := range rep.Memory {
		require.Positive(t, r.Bytes, r.Structure)
	}
	exact, bloom, bitmap := rep.Memory[0], rep.Memory[2], rep.Memory[5]
	require.Greater(t, exact.BitsPerID, 8*16.0, "an exact set stores the IDs and more")
	require.InDelta(t, 9.585, bloom.BitsPerID, 0.01, "classic Bloom at 1%%")
	require.InDelta(t, 1, bitmap.BitsPerID, 1e-9)
}

// checkLabBloom: one Bloom filter past its capacity against a scalable one.
func checkLabBloom(t *testing.T, rep *sketchLabReport) {
	bs := rep.Bloom
	require.NotNil(t, bs)
	last := bs.Rows[len(bs.Rows)-1]
	require.Greater(t, last.SingleFPR, 0.5, "one filter at 8× capacity is mostly ones")
	require.Less(t, last.ScalableFPR, 3*bs.Rate, "stacking keeps the rate bounded")
	require.Less(t, last.ScalableExpect, 2*bs.Rate)
	require.Greater(t, last.Layers, int64(1))
	require.Greater(t, last.ScalableBytes, int64(last.SingleBytes))
	require.Equal(t, int64(2000), bs.NonScalingFullAt, "a non-scaling value refuses past its capacity")
}

// checkLabCuckoo: cuckoo fill, delete and growth.
func checkLabCuckoo(t *testing.T, rep *sketchLabReport) {
	cl := rep.Cuckoo
	require.NotNil(t, cl)
	require.Greater(t, cl.FullAt, int64(1900))
	require.Zero(t, cl.AfterDeleteFalseNegatives)
	require.Less(t, cl.AfterDeleteLoad, cl.FullLoad)
	require.Len(t, cl.Scalable, len(scalingFills))
	require.Greater(t, cl.Scalable[len(cl.Scalable)-1].SubFilters, int64(1), "the cuckoo value grows")
}

// checkLabHLL: HyperLogLog error and encoding by n.
func checkLabHLL(t *testing.T, rep *sketchLabReport) {
	hs := rep.HLL
	require.NotNil(t, hs)
	require.InDelta(t, 0.0081, hs.StdErr, 0.0001)
	var ns []int64
	for _, r := range hs.Rows {
		ns = append(ns, r.N)
		require.Len(t, r.Errors, 8)
		require.Less(t, r.RMSError, 5*hs.StdErr, "n=%d", r.N)
	}
	require.Equal(t, []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}, ns)
	require.Equal(t, "sparse", hs.Rows[0].Encoding)
	require.Equal(t, "dense", hs.Rows[len(hs.Rows)-1].Encoding)
	require.Equal(t, 12304, hs.Rows[len(hs.Rows)-1].ValueBytes)
	require.Zero(t, hs.Rows[0].MaxAbsError, "one element is counted exactly")
}

// checkLabStore: the sketches stored through the Store.
func checkLabStore(t *testing.T, rep *sketchLabReport) {
	st := rep.Store
	require.NotNil(t, st)
	require.Equal(t, 2000, st.IDs)
	require.Len(t, st.Rows, 3)
	for _, r := range st.Rows {
		require.True(t, r.SameAsStandalone, "%s: the stored value is the in-memory one", r.Structure)
		require.Zero(t, r.FalseNegatives, r.Structure)
		require.Positive(t, r.ValueBytes, r.Structure)
	}
	require.InEpsilon(t, 2000, st.Rows[0].Count, 0.05, "PFCount")
	require.Less(t, st.Rows[1].FPR, 2*st.Rate, "Bloom reserved for the IDs at p")
	require.Less(t, st.Rows[2].FPR, 0.05, "cuckoo: about 2·2/255")
	require.Positive(t, st.TableBytes)
}

// checkLabCounters: Count-Min, Top-K and blind-write throughput.
func checkLabCounters(t *testing.T, rep *sketchLabReport) {
	cr := rep.Counters
	require.NotNil(t, cr)
	require.Len(t, cr.CMS, 3)
	for _, c := range cr.CMS {
		require.LessOrEqual(t, c.OverFraction, c.Delta+0.01, "Count-Min ε=%v", c.Epsilon)
		require.GreaterOrEqual(t, c.MeanOver, 0.0, "Count-Min never underestimates")
		require.Equal(t, 18+4*c.Width*c.Depth, c.ValueBytes)
	}
	require.Len(t, cr.TopK, 3)
	require.Greater(t, cr.TopK[2].Recall, 0.8, "k=100 2000×7")
	require.Len(t, cr.Throughput, 2)
	for _, r := range cr.Throughput {
		require.Positive(t, r.ReplyPerS, r.Command)
		require.Positive(t, r.BlindPerS, r.Command) // measured, not asserted: which is faster depends on the caches
	}
}

// checkLabFiles: the files written, SVGs well-formed.
func checkLabFiles(t *testing.T, rep *sketchLabReport) {
	require.Len(t, rep.Files, 9)
	require.Empty(t, rep.Missing)

	for _, f := range rep.Files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if len(f) > 4 && f[len(f)-4:] == ".svg" {
			requireWellFormedSVG(t, b)
		}
	}
}
