package sieve

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sievedb/sieve/vfs"
)

// The prefix-seek benchmark's database: benchPrefixUsers users of ten keys
// each, "u%07d/%d" (the prefix is "u%07d/", 9 bytes), even user numbers
// only, written in scattered order and compacted into 64 KiB tables in
// L6, then eight L0 tables spanning the keyspace on top (benchPrefixL0),
// below the L0 compaction trigger. Odd user numbers are the absent
// prefixes.
const benchPrefixUsers = 20000

func benchPrefixLen([]byte) int { return 9 }

var (
	benchPrefixOnce sync.Once
	benchPrefixDB   *DB
	benchPrefixErr  error
)

func benchPrefixOpen(b *testing.B) *DB {
	benchPrefixOnce.Do(func() {
		o := &Options{FS: vfs.NewMem(), Prefix: benchPrefixLen, PrefixName: "user9", MemTableSize: 256 << 10,
			TargetFileSize: 64 << 10, LBaseMaxBytes: 256 << 10, L0CompactionTrigger: 12, L0StopWritesTrigger: 24}
		db, err := Open("/db", o)
		if err != nil {
			benchPrefixErr = err
			return
		}
		for i := uint64(0); i < benchPrefixUsers; i++ {
			u := 2 * scatter(i, benchPrefixUsers)
			for j := 0; j < 10; j++ {
				if err := db.Put([]byte(fmt.Sprintf("u%07d/%d", u, j)), []byte("value-of-some-length"), nil); err != nil {
					benchPrefixErr = err
					return
				}
			}
		}
		if benchPrefixErr = db.Compact(nil, nil); benchPrefixErr != nil {
			return
		}
		benchPrefixErr = benchPrefixL0(db)
		waitCompactionsIdle(db)
		benchPrefixDB = db
	})
	if benchPrefixErr != nil {
		b.Fatal(benchPrefixErr)
	}
	return benchPrefixDB
}

// BenchmarkPrefixSeekAbsent compares SeekPrefixGE with SeekGE on absent
// prefixes of a database of many tables (doc/tuning.md). Each
// reports the tables in the LSM and, for SeekPrefixGE, the tables its
// filters skipped per seek.
//
//	go test -run '^$' -bench 'PrefixSeekAbsent' -count 1 .
func BenchmarkPrefixSeekAbsent(b *testing.B) {
	db := benchPrefixOpen(b)
	seek := func(b *testing.B, prefix bool) {
		it := db.NewIter(nil)
		defer it.Close()
		before := db.Metrics().PrefixSeeks
		key := make([]byte, 0, 16)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			u := 2*scatter(uint64(i), benchPrefixUsers) + 1
			key = fmt.Appendf(key[:0], "u%07d/", u)
			if prefix {
				if it.SeekPrefixGE(key) {
					b.Fatalf("absent prefix %s found", key)
				}
			} else {
				it.SeekGE(key)
			}
		}
		b.StopTimer()
		all := db.Metrics()
		m, tables := all.PrefixSeeks, int64(0)
		for _, l := range all.Levels {
			tables += l.NumFiles
		}
		b.ReportMetric(float64(tables), "tables")
		b.ReportMetric(float64(all.Levels[0].NumFiles), "L0-tables")
		b.ReportMetric(float64(all.Compaction.Count), "compactions")
		if prefix {
			b.ReportMetric(float64(m.Checks-before.Checks)/float64(b.N), "checked/op")
			b.ReportMetric(float64(m.Negatives-before.Negatives)/float64(b.N), "skipped/op")
			b.ReportMetric(float64(m.Unfiltered-before.Unfiltered)/float64(b.N), "unfiltered/op")
		}
	}
	b.Run("SeekGE", func(b *testing.B) { seek(b, false) })
	b.Run("SeekPrefixGE", func(b *testing.B) { seek(b, true) })
}

// benchPrefixL0 adds eight L0 tables over the whole keyspace on top of
// the compacted bottom level (a compaction backlog, as a write burst
// leaves it): each rewrites one key of every eighth present user.
func benchPrefixL0(db *DB) error {
	for t := uint64(0); t < 8; t++ {
		for u := 2 * t; u < 2*benchPrefixUsers; u += 16 {
			if err := db.Put([]byte(fmt.Sprintf("u%07d/0", u)), []byte("newer-value"), nil); err != nil {
				return err
			}
		}
		if err := db.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// waitCompactionsIdle returns once no background flush or compaction has
// run for 100 ms, so that a benchmark measures a settled LSM.
func waitCompactionsIdle(db *DB) {
	for idle := 0; idle < 5; {
		time.Sleep(20 * time.Millisecond)
		if backgroundIdle(db) {
			idle++
		} else {
			idle = 0
		}
	}
}
