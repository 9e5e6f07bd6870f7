package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMemTableFlag: -memtable-mib out of range is a usage error (exit 2)
// before anything is created.
func TestMemTableFlag(t *testing.T) {
	for _, v := range []string{"-1", "4097"} {
		dir := filepath.Join(t.TempDir(), "d")
		if code := run([]string{"-memtable-mib", v, "-dir", dir, "-addr", "127.0.0.1:0"}); code != 2 {
			t.Errorf("-memtable-mib %s: exit %d, want 2", v, code)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("-memtable-mib %s: the directory was created (%v)", v, err)
		}
	}
}
