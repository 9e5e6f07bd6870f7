package sieve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestIngestShape is a data-driven walk through ingestion
// (testdata/ingest_shape): each step writes, flushes, compacts, builds
// external tables or ingests them through the public API and prints the
// LSM after it (as TestLSMShape does), so the level each ingested table
// lands in and its sequence numbers show. Automatic compactions are held
// off. Commands:
//
//	batch                 input lines "put k v", "del k"
//	flush                 DB.Flush
//	compact               DB.Compact of everything
//	external name         input lines "k v": write external table /ext/<name>
//	file name             write the input lines as the file /ext/<name>
//	ingest name...        DB.Ingest of those tables (an error is printed)
//	snapshot [close]      take the snapshot later gets read through (or
//	                      close it)
//	get [snap] k ...      Get each key (through the snapshot with snap)
//
// Regenerate with go test -run TestIngestShape -rewrite and review the
// diff.
func TestIngestShape(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	db := openDB(t, &Options{FS: fs, MemTableSize: 4 << 20, TargetFileSize: 4 << 10,
		L0CompactionTrigger: 1000, L0StopWritesTrigger: 2000})
	var snap *Snapshot
	defer func() {
		if snap != nil {
			snap.Close()
		}
	}()
	testutil.RunDataDriven(t, "testdata/ingest_shape", func(t *testing.T, d *testutil.Case) string {
		switch d.Cmd {
		case "batch":
			b := db.NewBatch()
			for _, line := range d.Input {
				f := strings.Fields(line)
				switch {
				case len(f) == 3 && f[0] == "put":
					require.NoError(t, b.Put([]byte(f[1]), []byte(f[2])))
				case len(f) == 2 && f[0] == "del":
					require.NoError(t, b.Delete([]byte(f[1])))
				default:
					t.Fatalf("%s: bad batch line %q", d.Pos, line)
				}
			}
			require.NoError(t, db.Apply(b, nil))
		case "flush":
			require.NoError(t, db.Flush())
		case "compact":
			require.NoError(t, db.Compact(nil, nil))
		case "external":
			w, err := NewExternalTableWriter("/ext/"+d.Args[0].Key, &Options{FS: fs})
			require.NoError(t, err)
			for _, line := range d.Input {
				f := strings.Fields(line)
				require.Len(t, f, 2, "%s: bad line %q", d.Pos, line)
				if err := w.Set([]byte(f[0]), []byte(f[1])); err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
			}
			require.NoError(t, w.Close())
			return "ok\n"
		case "file":
			f, err := fs.Create("/ext/" + d.Args[0].Key)
			require.NoError(t, err)
			_, err = f.Write([]byte(strings.Join(d.Input, "\n")))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return "ok\n"
		case "ingest":
			var paths []string
			for _, a := range d.Args {
				paths = append(paths, "/ext/"+a.Key)
			}
			if err := db.Ingest(paths); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
		case "snapshot":
			if snap != nil {
				snap.Close()
				snap = nil
			}
			if len(d.Args) == 0 || d.Args[0].Key != "close" {
				snap = db.NewSnapshot()
			}
			return "ok\n"
		case "get":
			return shapeGets(db, snap, d)
		default:
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		v := db.versions.Current()
		defer v.Unref()
		if s := v.String(); s != "" {
			return s
		}
		return "(no tables)"
	})
}

// shapeGets runs a get step: each key through the snapshot when the first
// argument is "snap", else through the DB.
func shapeGets(db *DB, snap *Snapshot, d *testutil.Case) string {
	var sb strings.Builder
	get := db.Get
	args := d.Args
	if len(args) > 0 && args[0].Key == "snap" {
		get, args = snap.Get, args[1:]
	}
	for _, a := range args {
		v, err := get([]byte(a.Key))
		if err != nil {
			fmt.Fprintf(&sb, "%s: %v\n", a.Key, err)
		} else {
			fmt.Fprintf(&sb, "%s: %s\n", a.Key, v)
		}
	}
	return sb.String()
}
