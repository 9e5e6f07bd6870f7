package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepairCommand damages a table and the manifest of a generated
// database, runs "sieve repair" and then "sieve check", which must pass.
func TestRepairCommand(t *testing.T) {
	clean, _ := genDB(t)
	dir := t.TempDir()
	copyDir(t, clean, dir)
	tables := tableFiles(t, dir)
	path := filepath.Join(dir, tables[0])
	b, err := os.ReadFile(path)
	must(t, err)
	b[len(b)/2] ^= 0x10
	must(t, os.WriteFile(path, b, 0o644))
	r := sieveRun(t, "check", dir)
	if r.code != 1 {
		t.Fatalf("check of the damaged database exits %d, want 1", r.code)
	}
	r = sieveRun(t, "repair", dir)
	t.Logf("repair: exit %d\n%s", r.code, r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "set aside 1 files") || !strings.Contains(r.stdout, tables[0]) {
		t.Fatalf("repair exits %d:\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "lost", tables[0])); err != nil {
		t.Fatalf("the damaged table is not in lost/: %v", err)
	}
	r = sieveRun(t, "check", dir)
	if r.code != 0 {
		t.Fatalf("check after repair exits %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
