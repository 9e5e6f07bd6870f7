package sieve

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sievedb/sieve/vfs"
)

// BenchmarkCheckpoint checkpoints the 1M-key read database
// (bench_read_test.go, compacted, on disk) with hard links, and
// BenchmarkCheckpointCopy with the tables copied (an FS without links). An
// op is one Checkpoint; db-MiB is the database's table bytes and
// extra-MiB what a checkpoint adds on disk (its files' blocks not shared
// with the source by a hard link: the WALs and the manifest when linked):
//
//	go test -run '^$' -bench 'BenchmarkCheckpoint' -benchtime 5x .
//
// BenchmarkSteadyCheckpoint checkpoints the steady-state database (left
// as its load left it: memtables and their WALs, L0, compactions).
func BenchmarkCheckpoint(b *testing.B)       { benchCheckpoint(b, benchReadDB(b), false) }
func BenchmarkCheckpointCopy(b *testing.B)   { benchCheckpoint(b, benchReadDB(b), true) }
func BenchmarkSteadyCheckpoint(b *testing.B) { benchCheckpoint(b, benchSteadyDB(b), false) }

func benchCheckpoint(b *testing.B, db *DB, copyTables bool) {
	if copyTables {
		// The same database, opened through an FS that cannot link.
		dir := db.dirname
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		o := benchReadOptions()
		o.FS = noLinkFS{vfs.Default}
		var err error
		if db, err = Open(dir, o); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
	}
	out := b.TempDir()
	var extra, total int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(out, fmt.Sprintf("ckpt-%d", i))
		if err := db.Checkpoint(dir); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		e, t := checkpointDiskUse(b, dir)
		extra, total = extra+e, total+t
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/float64(b.N)/(1<<20), "db-MiB")
	b.ReportMetric(float64(extra)/float64(b.N)/(1<<20), "extra-MiB")
}

// checkpointDiskUse returns the bytes on disk of dir's files not shared
// through a hard link (link count 1), and of all its files.
func checkpointDiskUse(b *testing.B, dir string) (extra, total int64) {
	names, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range names {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		used := st.Blocks * 512
		total += used
		if st.Nlink == 1 {
			extra += used
		}
	}
	return extra, total
}
