package compaction

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"

	"github.com/stretchr/testify/require"
)

// TestDocExamples runs the GC examples table of the package documentation
// so that it cannot drift from the code.
func TestDocExamples(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	cols := regexp.MustCompile(`\s{2,}`)
	in := false
	n := 0
	for _, line := range strings.Split(string(src), "\n") {
		body, ok := strings.CutPrefix(line, "//\t")
		switch {
		case ok && strings.HasPrefix(body, "input "):
			in = true
			continue
		case !ok:
			in = false
		}
		if !in {
			continue
		}
		f := cols.Split(strings.TrimSpace(body), -1)
		require.Len(t, f, 5, "doc example %q", body)
		es, err := parseEntries(strings.Fields(f[0]))
		require.NoError(t, err)
		sortEntries(es)
		opts := GCOptions{}
		if f[1] != "-" {
			d := &testutil.Case{Args: []testutil.Arg{{Key: "s", Vals: strings.Split(f[1], ",")}}}
			opts.Snapshots = d.Uints(t, "s")
		}
		if f[2] == "yes" {
			opts.ElideTombstone = func([]byte) bool { return true }
		}
		if f[3] != "-" {
			opts.Merger, err = mergerByName(f[3])
			require.NoError(t, err)
		}
		it := NewIter(newSliceIter(es), opts)
		var got []string
		for _, e := range collect(t, it) {
			got = append(got, e.String())
		}
		want := f[4]
		if want == "(nothing)" {
			want = ""
		}
		require.Equal(t, want, strings.Join(got, " "), "doc example %q", body)
		n++
	}
	require.Equal(t, 14, n, "doc examples found")
}
