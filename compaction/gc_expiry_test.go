package compaction

import (
	"fmt"
	"testing"

	"github.com/sievedb/sieve/internal/base"
	"github.com/stretchr/testify/require"
)

// expEntry is ukey's SetExpiring at seq with deadline d.
func expEntry(ukey string, seq uint64, d int64, v string) entry {
	return entry{key: base.MakeInternalKey([]byte(ukey), seq, base.KindSetExpiring), value: base.AppendExpiring(nil, d, []byte(v))}
}

func runGC(t *testing.T, es []entry, o GCOptions) ([]string, GCStats) {
	t.Helper()
	sortEntries(es)
	it := NewIter(newSliceIter(es), o)
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if k.Kind() == base.KindSetExpiring {
			d, val, _ := base.SplitExpiring(v)
			v = fmt.Appendf(nil, "%s@%d", val, d)
		}
		out = append(out, fmt.Sprintf("%s.%s.%d:%s", k.UserKey, k.Kind(), k.SeqNum(), v))
	}
	require.NoError(t, it.Close())
	return out, it.Stats()
}

// TestGCExpiry: an expired value becomes a Delete of its sequence number
// that hides the versions below it (kept while data may lie below the
// output, elided where nothing does); a live one stays, and operands
// above it are combined among themselves, never folded into it.
func TestGCExpiry(t *testing.T) {
	old := func() []entry {
		return []entry{expEntry("a", 9, 100, "new"), {key: base.MakeInternalKey([]byte("a"), 5, base.KindSet), value: []byte("old")}}
	}
	out, st := runGC(t, old(), GCOptions{Now: 100})
	require.Equal(t, []string{"a.DEL.9:"}, out, "expired at its deadline: a Delete hides a.5 and whatever lies below")
	require.Equal(t, int64(1), st.Expired)
	out, _ = runGC(t, old(), GCOptions{Now: 100, ElideTombstone: func([]byte) bool { return true }})
	require.Empty(t, out, "nothing below: the Delete goes too")
	out, _ = runGC(t, old(), GCOptions{Now: 99})
	require.Equal(t, []string{"a.SETEXP.9:new@100"}, out)
	out, _ = runGC(t, old(), GCOptions{Now: 100, Snapshots: []uint64{6}})
	require.Equal(t, []string{"a.DEL.9:", "a.SET.5:old"}, out, "a snapshot keeps the version it sees")

	ops := []entry{
		{key: base.MakeInternalKey([]byte("m"), 12, base.KindMerge), value: []byte("y")},
		{key: base.MakeInternalKey([]byte("m"), 11, base.KindMerge), value: []byte("x")},
		expEntry("m", 10, 100, "b"),
	}
	out, _ = runGC(t, ops, GCOptions{Now: 50, Merger: appendMerger{}})
	require.Equal(t, []string{"m.MERGE.12:xy", "m.SETEXP.10:b@100"}, out)
	out, _ = runGC(t, ops, GCOptions{Now: 100, Merger: appendMerger{}})
	require.Equal(t, []string{"m.SET.12:xy"}, out, "expired: the operands fold onto nothing")

	// The filter is asked about the newest stripe's values only.
	asked := 0
	f := func(ukey, v []byte, d int64) bool { asked++; return string(v) == "old" }
	out, st = runGC(t, []entry{{key: base.MakeInternalKey([]byte("a"), 5, base.KindSet), value: []byte("old")}},
		GCOptions{Filter: f})
	require.Equal(t, []string{"a.DEL.5:"}, out)
	require.Equal(t, int64(1), st.Filtered)
	out, _ = runGC(t, []entry{{key: base.MakeInternalKey([]byte("a"), 5, base.KindSet), value: []byte("old")}},
		GCOptions{Filter: f, Snapshots: []uint64{7}})
	require.Equal(t, []string{"a.SET.5:old"}, out, "a snapshot sees it: not filtered")
	require.Equal(t, 1, asked)
}
