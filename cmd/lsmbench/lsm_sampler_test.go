package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/sievedb/sieve"
	"github.com/stretchr/testify/require"
)

// TestWriteBenchmarkSamplesL0 checks that a write benchmark reports the
// LSM it saw while writing.
func TestWriteBenchmarkSamplesL0(t *testing.T) {
	code, out, errs := runCLI(t, "-num=20000", "-progress=off", "-memtable_size=64KiB", "-benchmarks=fillrandom")
	require.Equal(t, 0, code, errs)
	m := regexp.MustCompile(`LSM while writing \((\d+) samples, every 100ms\): L0 tables max \d+, mean [0-9.]+, at each tenth of the run [0-9 ]+; immutable memtables max \d+; write stalls \d+ \([0-9.]+s\), slowdowns \d+`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	samples, _ := strconv.Atoi(m[1])
	require.GreaterOrEqual(t, samples, 2, out)
}

// TestLSMSamplerCountsL0 checks that the sampler's figures can be
// non-zero: three flushed tables that no compaction takes (the trigger is
// out of reach) are seen as three L0 tables.
func TestLSMSamplerCountsL0(t *testing.T) {
	db, err := sieve.Open(t.TempDir(), &sieve.Options{L0CompactionTrigger: 100, L0StopWritesTrigger: 200})
	require.NoError(t, err)
	defer db.Close()
	before := db.Metrics()
	s := startLSMSampler(db, time.Millisecond)
	for i := range 3 {
		require.NoError(t, db.Put(fmt.Appendf(nil, "k%d", i), []byte("v"), nil))
		require.NoError(t, db.Flush())
	}
	note := s.stop(before, db.Metrics())
	require.Contains(t, note, "L0 tables max 3,", note)
	require.Regexp(t, `at each tenth of the run [0-3 ]* 3;`, note)
}
