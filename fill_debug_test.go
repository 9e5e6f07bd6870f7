package sieve

import (
	"log/slog"
	"math/rand"
	"os"
	"testing"
	"time"
)

func TestFillDebug(t *testing.T) {
	if os.Getenv("SIEVE_FILL_DEBUG") == "" {
		t.Skip("debug harness")
	}
	db, err := Open(t.TempDir(), &Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := make([]byte, 16)
	val := make([]byte, 100)
	rng := rand.New(rand.NewSource(1))
	start := time.Now()
	for i := 0; i < 1000000; i++ {
		rng.Read(val[:50])
		if err := db.Put(benchKey(key, uint64(rng.Int63n(4000000))), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("fill %v slowdowns %d", time.Since(start), db.metrics.slowdowns.Load())
	start = time.Now()
	db.Flush()
	db.Compact(nil, nil)
	t.Logf("compact %v\n%s", time.Since(start), db.Metrics())
}
