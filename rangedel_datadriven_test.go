package sieve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestRangeDelLSM is a data-driven walk through range deletions
// (testdata/rangedel): each step writes, flushes, compacts, reopens or
// reads through the public API and prints the LSM after it — per level
// the tables with their key ranges and seqnum ranges and, under each, its
// range tombstones (fragments with their sequence numbers) — and the
// range-deletion metrics. Automatic compactions are held off. Commands:
//
//	batch                 input lines "put k v", "del k", "merge k v", "delrange a b"
//	delrange a b          DB.DeleteRange(a, b)
//	fill from=N to=M size=S  put k<N>..k<M-1> (4 digits) = v<i> and S dots
//	flush                 DB.Flush
//	compact [start=k] [end=k]
//	snapshot name / release name
//	reopen                Close and Open again (releases snapshots)
//	get k ... [snap=name] Get each key
//	scan [snap=name]      the visible keys forward, then backward
//
// Regenerate with go test -run TestRangeDelLSM -rewrite and review.
func TestRangeDelLSM(t *testing.T) {
	l := &rangeDelLSM{fs: vfs.NewMem(), snaps: map[string]*Snapshot{}}
	l.db = openDB(t, l.options())
	testutil.RunDataDriven(t, "testdata/rangedel", l.run)
}

// rangeDelLSM is TestRangeDelLSM's database and named snapshots.
type rangeDelLSM struct {
	fs    *vfs.MemFS
	db    *DB
	snaps map[string]*Snapshot
}

func (l *rangeDelLSM) options() *Options {
	return &Options{FS: l.fs, Merger: appendMerger{}, MemTableSize: 4 << 20, TargetFileSize: 4 << 10,
		L0CompactionTrigger: 1000, L0StopWritesTrigger: 2000, Compression: NoCompression, MaxSubcompactions: 1}
}

// run runs one case.
func (l *rangeDelLSM) run(t *testing.T, d *testutil.Case) string {
	db := l.db
	switch d.Cmd {
	case "batch":
		b := db.NewBatch()
		for _, line := range d.Input {
			require.NoError(t, rangeDelBatchLine(b, strings.Fields(line)), "%s: %q", d.Pos, line)
		}
		require.NoError(t, db.Apply(b, nil))
	case "delrange":
		require.NoError(t, db.DeleteRange([]byte(d.Args[0].Key), []byte(d.Args[1].Key), nil))
	case "fill":
		pad := strings.Repeat(".", int(d.Int(t, "size", 0)))
		for i := d.Int(t, "from", 0); i < d.Int(t, "to", 0); i++ {
			require.NoError(t, db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%d%s", i, pad)), nil))
		}
	case "flush":
		require.NoError(t, db.Flush())
	case "compact":
		bound := func(name string) []byte {
			if v := d.Str(name, ""); v != "" {
				return []byte(v)
			}
			return nil
		}
		require.NoError(t, db.Compact(bound("start"), bound("end")))
	case "snapshot":
		l.snaps[d.Args[0].Key] = db.NewSnapshot()
	case "release":
		require.NoError(t, l.snaps[d.Args[0].Key].Close())
		delete(l.snaps, d.Args[0].Key)
	case "reopen":
		for name, s := range l.snaps {
			require.NoError(t, s.Close())
			delete(l.snaps, name)
		}
		require.NoError(t, db.Close())
		l.db = openDB(t, l.options())
	case "get", "scan":
		return rangeDelRead(t, db, l.snaps[d.Str("snap", "")], d)
	case "lsm":
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	return rangeDelShape(t, l.db)
}

func rangeDelBatchLine(b *Batch, f []string) error {
	switch {
	case len(f) == 3 && f[0] == "put":
		return b.Put([]byte(f[1]), []byte(f[2]))
	case len(f) == 2 && f[0] == "del":
		return b.Delete([]byte(f[1]))
	case len(f) == 3 && f[0] == "merge":
		return b.Merge([]byte(f[1]), []byte(f[2]))
	case len(f) == 3 && f[0] == "delrange":
		return b.DeleteRange([]byte(f[1]), []byte(f[2]))
	}
	return fmt.Errorf("bad batch line")
}

// rangeDelRead runs a get or scan case, through snap when not nil.
func rangeDelRead(t *testing.T, db *DB, snap *Snapshot, d *testutil.Case) string {
	var sb strings.Builder
	if d.Cmd == "get" {
		for _, a := range d.Args {
			if a.Key == "snap" {
				continue
			}
			get := db.Get
			if snap != nil {
				get = snap.Get
			}
			v, err := get([]byte(a.Key))
			if err != nil {
				fmt.Fprintf(&sb, "%s: %v\n", a.Key, err)
			} else {
				fmt.Fprintf(&sb, "%s: %s\n", a.Key, strings.TrimRight(string(v), "."))
			}
		}
		return sb.String()
	}
	var it *Iterator
	if snap != nil {
		it = snap.NewIter(nil)
	} else {
		it = db.NewIter(nil)
	}
	var fwd, back []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key())+"="+strings.TrimRight(string(it.Value()), "."))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append(back, string(it.Key()))
	}
	require.NoError(t, it.Close())
	fmt.Fprintf(&sb, "forward: %s\nbackward: %s\n", strings.Join(fwd, " "), strings.Join(back, " "))
	return sb.String()
}

// rangeDelShape prints the default family's tables, each with its range
// tombstones, and the range-deletion metrics.
func rangeDelShape(t *testing.T, db *DB) string {
	v := db.versions.Current()
	defer v.Unref()
	var sb strings.Builder
	lv := v.Levels(0)
	for level, files := range lv {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "L%d:\n", level)
		for _, f := range files {
			fmt.Fprintf(&sb, "  %06d:[%s-%s] seqs=[%d-%d]\n", f.FileNum, f.Smallest, f.Largest, f.SmallestSeq, f.LargestSeq)
			l, err := db.tableRangeDels(f)
			require.NoError(t, err)
			if l == nil {
				continue
			}
			for _, fr := range l.Frags {
				seqs := make([]string, len(fr.Seqs))
				for i, s := range fr.Seqs {
					seqs[i] = fmt.Sprint(s)
				}
				fmt.Fprintf(&sb, "    rangedel [%q, %q) #%s\n", fr.Start, fr.End, strings.Join(seqs, ","))
			}
		}
	}
	if sb.Len() == 0 {
		sb.WriteString("(no tables)\n")
	}
	m := db.Metrics()
	mem := 0
	rs := db.loadReadState()
	for _, g := range append([]*memGroup{rs.mem}, rs.imm...) {
		if mt := g.table(0); mt != nil {
			mem += int(mt.Stats().RangeDels)
		}
	}
	rs.unref()
	fmt.Fprintf(&sb, "memtable range tombstones: %d; written %d, entries dropped %d, tombstones dropped %d, tables dropped %d\n",
		mem, m.RangeDel.Written, m.RangeDel.KeysDropped, m.RangeDel.TombstonesDropped, m.RangeDel.TablesDropped)
	return sb.String()
}
