package compaction

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/rangedel"
	"github.com/sievedb/sieve/internal/testutil"
)

// elideArg turns elide=all|none|k1,k2 into an ElideTombstone predicate
// that also records the keys it was asked about.
func elideArg(d *testutil.Case, asked *[]string) func([]byte) bool {
	vals, ok := d.Arg("elide")
	if !ok {
		return nil
	}
	return func(ukey []byte) bool {
		*asked = append(*asked, string(ukey))
		if len(vals) == 0 || (len(vals) == 1 && vals[0] == "all") {
			return true
		}
		for _, v := range vals {
			if v == string(ukey) {
				return true
			}
		}
		return false
	}
}

func formatStats(s GCStats) string {
	parts := []string{fmt.Sprintf("in=%d", s.EntriesIn), fmt.Sprintf("out=%d", s.EntriesOut)}
	add := func(name string, n int64) {
		if n != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", name, n))
		}
	}
	add("shadowed", s.DroppedShadowed)
	add("tombstones", s.DroppedTombstones)
	add("full-merges", s.FullMerges)
	add("partial-merges", s.PartialMerges)
	add("operands-merged", s.OperandsMerged)
	add("partial-declined", s.PartialMergesDeclined)
	add("merge-errors", s.MergeErrors)
	add("range-dropped", s.DroppedByRangeDel)
	return "stats: " + strings.Join(parts, " ")
}

// formatByUserKey prints entries one line per user key.
func formatByUserKey(es []entry) string {
	var sb strings.Builder
	for i, e := range es {
		if i > 0 {
			if bytes.Equal(es[i-1].key.UserKey, e.key.UserKey) {
				sb.WriteByte(' ')
			} else {
				sb.WriteByte('\n')
			}
		}
		sb.WriteString(e.String())
	}
	if len(es) == 0 {
		return "(empty)"
	}
	return sb.String()
}

// TestGCDataDriven runs testdata/gc: each case is a compaction iterator
// over the entries given as input (sorted for it) with
//
//	snapshots=s1,s2  open snapshot seqnums
//	elide[=all|k1,k2] ElideTombstone: true for all keys, or for those listed
//	merger=append|append-refuse-odd|counter|none
//	asked            also print the keys ElideTombstone was asked about
//	rangedel=a-c@7,b-d@9  range tombstones [a, c) at 7 and [b, d) at 9
//
// testdata/gc_rangedel holds the range-tombstone cases.
func TestGCDataDriven(t *testing.T) {
	for _, f := range []string{"testdata/gc", "testdata/gc_rangedel"} {
		t.Run(f, func(t *testing.T) { testutil.RunDataDriven(t, f, runGCCase) })
	}
}

func runGCCase(t *testing.T, d *testutil.Case) string {
	if d.Cmd != "gc" {
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	es, err := parseEntries(strings.Fields(strings.Join(d.Input, " ")))
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	sortEntries(es)
	m, err := mergerByName(d.Str("merger", "none"))
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	var asked []string
	it := NewIter(newSliceIter(es), GCOptions{
		Snapshots:      d.Uints(t, "snapshots"),
		ElideTombstone: elideArg(d, &asked),
		Merger:         m,
		RangeDels:      rangeDelArg(t, d),
	})
	out := collect(t, it)
	if err := it.Close(); err != nil {
		t.Fatalf("%s: close: %v", d.Pos, err)
	}
	s := formatByUserKey(out) + "\n" + formatStats(it.Stats())
	if d.Has("asked") {
		s += "\nasked: " + strings.Join(asked, " ")
	}
	return s
}

// rangeDelArg parses rangedel=start-end@seq,... into a fragmented list.
func rangeDelArg(t *testing.T, d *testutil.Case) *rangedel.List {
	vals, _ := d.Arg("rangedel")
	var ts []rangedel.Tombstone
	for _, v := range vals {
		var seq uint64
		rng, s, ok := strings.Cut(v, "@")
		start, end, ok2 := strings.Cut(rng, "-")
		if _, err := fmt.Sscan(s, &seq); err != nil || !ok || !ok2 {
			t.Fatalf("%s: bad rangedel %q", d.Pos, v)
		}
		ts = append(ts, rangedel.Tombstone{Start: []byte(start), End: []byte(end), Seq: seq})
	}
	return rangedel.Build(ts)
}
