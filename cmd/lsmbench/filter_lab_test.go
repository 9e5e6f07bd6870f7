package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireRateNear checks that k false positives in n probes agree with the
// rate p: within 4.5 binomial standard deviations (plus a little slack for
// rates so small that a handful of hits decide).
func requireRateNear(t *testing.T, p float64, k, n int64, msg string) {
	t.Helper()
	mean := p * float64(n)
	sd := math.Sqrt(float64(n) * p * (1 - p))
	require.InDelta(t, mean, float64(k), 4.5*sd+3, "%s: %d of %d, expected rate %v", msg, k, n, p)
}

func TestFilterLab(t *testing.T) {
	out := t.TempDir()
	code, stdout, errs := runCLI(t, "filters", "-n=20000", "-probes=50000", "-bits=4,10", "-fingerprint_bits=8,12", "-ribbon_bits=5,7",
		"-k_bits=10", "-k_max=10", "-overfill=0.5,1,3", "-out="+out, "-json", "-progress=off")
	require.Equal(t, 0, code, errs)
	var rep filterLabReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, "sieve.lsmbench.filters.v1", rep.Schema)

	require.Len(t, rep.Sweep, 10) // 2 bloom, 2 standardbloom, 2 cuckoo, fuse 8 and 16, 2 ribbon
	for _, r := range rep.Sweep {
		require.Zero(t, r.FalseNegatives, r.Name)
		require.Equal(t, int64(50000), r.Probed)
		require.True(t, r.MeasuredFPRLow <= r.MeasuredFPR && r.MeasuredFPR <= r.MeasuredFPRHigh, r.Name)
		requireRateNear(t, r.ExpectedFPR, r.FalsePositives, r.Probed, r.Name)
		require.Positive(t, r.BuildNsPerKey)
		require.Positive(t, r.ProbeHitNs)
		require.Positive(t, r.ProbeMissNs)
		require.InDelta(t, r.BitsPerKey, 8*r.BytesPerKey, 1e-9)
		switch r.Policy {
		case "cuckoo":
			require.Zero(t, r.K)
			require.LessOrEqual(t, r.ExpectedFPR, r.ClassicFPR, "below the 8/2^f bound")
		case "binaryfuse":
			require.InDelta(t, math.Exp2(-r.Param), r.ExpectedFPR, 1e-12)
			require.Less(t, r.BitsPerKey, 1.3*r.Param)
		case "ribbon":
			require.InDelta(t, r.Param, r.BitsPerKey, 0.1, "%s: size as asked", r.Name)
		default:
			require.InDelta(t, r.Param, r.BitsPerKey, 0.1, "%s: size as asked", r.Name)
			require.Positive(t, r.K)
		}
	}

	ks := rep.KSweep
	require.NotNil(t, ks)
	require.Len(t, ks.Rows, 10)
	require.InDelta(t, 6.93, ks.OptimalK, 0.01)
	require.InDelta(t, 7, ks.BestMeasuredK, 2)
	for _, r := range ks.Rows {
		require.InDelta(t, r.BitsSetTheory, r.BitsSet, 0.01, "k=%d", r.K)
		requireRateNear(t, r.TheoryFPR, r.FalsePositives, 50000, "k sweep")
	}
	require.InDelta(t, 0.5, ks.Rows[6].BitsSet, 0.01, "half the bits set at the optimal k")

	o := rep.Overfill
	require.NotNil(t, o)
	require.Len(t, o.Rows, 3)
	require.Equal(t, int64(20000), o.Rows[1].Keys)
	require.InDelta(t, 0.01, o.Rows[1].BloomFPR, 0.004, "sized for 1%%")
	require.InDelta(t, 0.44, o.Rows[2].BloomFPR, 0.03, "1%% became 44%% at 3n")
	require.InDelta(t, o.Rows[2].BloomTheory, o.Rows[2].BloomFPR, 0.02)
	require.Greater(t, o.CuckooFullAt, int64(19000), "the cuckoo filter holds its capacity")
	require.True(t, o.Rows[2].CuckooRefusedAny)
	require.False(t, o.Rows[0].CuckooRefusedAny)

	require.Len(t, rep.Files, 7)
	for _, f := range rep.Files {
		require.Equal(t, out, filepath.Dir(f))
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		switch filepath.Ext(f) {
		case ".svg":
			requireWellFormedSVG(t, b)
		case ".csv":
			rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
			require.NoError(t, err, f)
			require.Greater(t, len(rows), 1, f)
		}
	}
}

func TestFilterLabText(t *testing.T) {
	code, stdout, errs := runCLI(t, "filters", "-n=5000", "-probes=5000", "-policies=cuckoo", "-fingerprint_bits=12",
		"-k_max=3", "-overfill=1,2", "-out="+t.TempDir(), "-progress=off")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{"1. FPR against space", "cuckoo", "f=12", "2. The number of hashes", "3. Overfill",
		"ErrFull", "fpr_vs_bits.svg", "overfill.svg", "wall time"} {
		require.Contains(t, stdout, want)
	}
	_, _, errs = runCLI(t, "filters", "-policies=xor")
	require.Contains(t, errs, `unknown "xor"`)
	code, _, _ = runCLI(t, "filters", "-fingerprint_bits=12.5")
	require.Equal(t, 2, code)
}
