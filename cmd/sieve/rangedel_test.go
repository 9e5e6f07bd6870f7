package main

import (
	"strings"
	"testing"

	"github.com/sievedb/sieve"
)

// TestRangeDelTool: check accepts a database whose tables and WAL hold
// range tombstones, wal dump shows them, and sstable layout shows the
// range-deletion block.
func TestRangeDelTool(t *testing.T) {
	dir := t.TempDir()
	db, err := sieve.Open(dir, nil)
	must(t, err)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		must(t, db.Put([]byte(k), []byte("v"), nil))
	}
	must(t, db.DeleteRange([]byte("b"), []byte("d"), nil))
	must(t, db.Flush())
	must(t, db.DeleteRange([]byte("d"), []byte("z"), nil)) // stays in the WAL
	must(t, db.Close())

	r := sieveRunUnchanged(t, dir, "check", dir)
	if r.code != 0 {
		t.Fatalf("check: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	logs := filesOf(t, dir, "*.log")
	var dump strings.Builder
	for _, l := range logs {
		dump.WriteString(sieveRunUnchanged(t, dir, "wal", "dump", "-n", "0", l).stdout)
	}
	if !strings.Contains(dump.String(), "RANGEDEL") {
		t.Fatalf("wal dump shows no range deletion:\n%s", dump.String())
	}
	tables := filesOf(t, dir, "*.sst")
	r = sieveRunUnchanged(t, dir, "sstable", "dump", "-blocks", tables[0])
	if r.code != 0 || !strings.Contains(r.stdout, "1 fragments, 1 tombstones") {
		t.Fatalf("sstable dump: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
