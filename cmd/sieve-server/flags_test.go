package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMemTableFlag: -memtable-mib or -l0-compaction-trigger out of range
// is a usage error (exit 2)
// before anything is created.
func TestMemTableFlag(t *testing.T) {
	for _, c := range [][2]string{{"-memtable-mib", "-1"}, {"-memtable-mib", "4097"}, {"-l0-compaction-trigger", "-1"}, {"-l0-compaction-trigger", "33"}} {
		dir := filepath.Join(t.TempDir(), "d")
		if code := run([]string{c[0], c[1], "-dir", dir, "-addr", "127.0.0.1:0"}); code != 2 {
			t.Errorf("%s %s: exit %d, want 2", c[0], c[1], code)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s %s: the directory was created (%v)", c[0], c[1], err)
		}
	}
}
