package sieve

import (
	"os"
	"path/filepath"
	"testing"
)

// benchIngestN is the number of keys BenchmarkIngest loads.
const benchIngestN = 1000000

// BenchmarkIngest compares loading benchIngestN keys ("key%013d", 100-byte
// values, in key order) into a fresh database on the OS file system
// (doc/DESIGN.md, "Ingestion"):
//
//   - Puts: NoSync Puts, then Flush (the keys durable in L0 tables; the
//     compactions they trigger are not waited for);
//
//   - ExternalWrite: NewExternalTableWriter, Set each key, Close;
//
//   - Ingest: DB.Ingest of that table (written before the timer starts)
//     into the empty database: the copy path;
//
//   - IngestRewrite: the same with one key of the table's range in the
//     memtable: the rewrite path (flush, every key rewritten with the
//     Ingest's sequence number into TargetFileSize tables).
//
//     go test -run '^$' -bench 'Ingest$' -benchtime 1x -count 1 .
func BenchmarkIngest(b *testing.B) {
	vals := benchValues()
	key := make([]byte, 16)
	open := func(b *testing.B) (*DB, string) {
		dir := b.TempDir()
		db, err := Open(filepath.Join(dir, "db"), &Options{})
		if err != nil {
			b.Fatal(err)
		}
		return db, dir
	}
	writeExt := func(b *testing.B, path string) {
		w, err := NewExternalTableWriter(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := uint64(0); i < benchIngestN; i++ {
			if err := w.Set(putBenchKey(key, i), vals[i%uint64(len(vals))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Puts", func(b *testing.B) {
		for n := 0; n < b.N; n++ {
			b.StopTimer()
			db, _ := open(b)
			b.StartTimer()
			for i := uint64(0); i < benchIngestN; i++ {
				if err := db.Put(putBenchKey(key, i), vals[i%uint64(len(vals))], NoSync); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			db.Close()
		}
	})
	b.Run("ExternalWrite", func(b *testing.B) {
		for n := 0; n < b.N; n++ {
			writeExt(b, filepath.Join(b.TempDir(), "ext.sst"))
		}
	})
	ingest := func(b *testing.B, overlap bool) {
		for n := 0; n < b.N; n++ {
			b.StopTimer()
			db, dir := open(b)
			path := filepath.Join(dir, "ext.sst")
			writeExt(b, path)
			if overlap {
				// One write inside the table's range: the rewrite path.
				if err := db.Put(putBenchKey(key, benchIngestN/2), []byte("x"), NoSync); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if err := db.Ingest([]string{path}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			m := db.Metrics()
			b.ReportMetric(float64(m.Ingest.Tables), "tables")
			b.ReportMetric(float64(m.Ingest.Copied), "copied")
			db.Close()
			os.Remove(path)
		}
	}
	b.Run("Ingest", func(b *testing.B) { ingest(b, false) })
	b.Run("IngestRewrite", func(b *testing.B) { ingest(b, true) })
}
