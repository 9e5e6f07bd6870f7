package sieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestLSMShape is a data-driven walk through the life of an LSM tree
// (testdata/lsm_shape): each step writes, flushes, compacts or reopens
// through the public API and prints the shape of the tree after it, per
// level the tables with their key ranges (smallest and largest internal key,
// user key#seqnum,kind), seqnum ranges and sizes. Automatic compactions are
// held off (high triggers), so the shape changes only when a step says so.
// Commands:
//
//	batch            input lines "put k v", "del k", "merge k v" in one batch
//	fill from=N to=M size=S  put keys k<N>..k<M-1> with S-byte values
//	flush            DB.Flush
//	compact [start=k] [end=k]  DB.Compact of [start, end] (default all)
//	reopen           Close and Open again
//	get k ...        Get each key (a long value is cut to 16 bytes)
//	lsm              only print the shape
//
// Regenerate the expected shapes with go test -run TestLSMShape -rewrite
// and review the diff.
func TestLSMShape(t *testing.T) {
	fs := vfs.NewMem()
	opts := func() *Options {
		return &Options{FS: fs, Merger: appendMerger{}, MemTableSize: 4 << 20, TargetFileSize: 4 << 10,
			L0CompactionTrigger: 1000, L0StopWritesTrigger: 2000}
	}
	db := openDB(t, opts())
	shape := func() string { return lsmString(db) }
	testutil.RunDataDriven(t, "testdata/lsm_shape", func(t *testing.T, d *testutil.Case) string {
		switch d.Cmd {
		case "batch":
			b := db.NewBatch()
			for _, line := range d.Input {
				f := strings.Fields(line)
				var err error
				switch {
				case len(f) == 3 && f[0] == "put":
					err = b.Put([]byte(f[1]), []byte(f[2]))
				case len(f) == 2 && f[0] == "del":
					err = b.Delete([]byte(f[1]))
				case len(f) == 3 && f[0] == "merge":
					err = b.Merge([]byte(f[1]), []byte(f[2]))
				default:
					t.Fatalf("%s: bad batch line %q", d.Pos, line)
				}
				require.NoError(t, err)
			}
			require.NoError(t, db.Apply(b, nil))
		case "fill":
			// Random letters, which Snappy cannot shrink, so that table
			// sizes follow the value sizes.
			val := make([]byte, d.Int(t, "size", 10))
			for i := d.Int(t, "from", 0); i < d.Int(t, "to", 0); i++ {
				rng := rand.New(rand.NewPCG(uint64(i), uint64(len(val))))
				for j := range val {
					val[j] = 'a' + byte(rng.IntN(26))
				}
				require.NoError(t, db.Put([]byte(fmt.Sprintf("k%04d", i)), val, nil))
			}
		case "flush":
			require.NoError(t, db.Flush())
		case "compact":
			var start, end []byte
			if d.Has("start") {
				start = []byte(d.Str("start", ""))
			}
			if d.Has("end") {
				end = []byte(d.Str("end", ""))
			}
			require.NoError(t, db.Compact(start, end))
		case "reopen":
			require.NoError(t, db.Close())
			db = openDB(t, opts())
		case "get":
			var sb strings.Builder
			for _, a := range d.Args {
				v, err := db.Get([]byte(a.Key))
				if err != nil {
					fmt.Fprintf(&sb, "%s: %v\n", a.Key, err)
				} else if len(v) > 16 {
					fmt.Fprintf(&sb, "%s: %s... (%d bytes)\n", a.Key, v[:16], len(v))
				} else {
					fmt.Fprintf(&sb, "%s: %s\n", a.Key, v)
				}
			}
			return sb.String()
		case "lsm":
		default:
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		return shape()
	})
}
