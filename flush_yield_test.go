package sieve

import (
	"testing"

	"github.com/sievedb/sieve/compaction"
)

// TestOnlyCompactionsYield checks that a flush's table writer does not
// yield its processor (a flush is on the writers' path: writes stall while
// memtables wait for it) and a compaction's does (tableoutput.go,
// backgroundYieldBlocks).
func TestOnlyCompactionsYield(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if y := db.writerOptions(0, 0, nil).YieldEvery; y != 0 {
		t.Errorf("a flush's writer yields every %d blocks", y)
	}
	if y := db.writerOptions(0, 6, &compaction.Compaction{}).YieldEvery; y != backgroundYieldBlocks {
		t.Errorf("a compaction's writer yields every %d blocks, want %d", y, backgroundYieldBlocks)
	}
}
