package sketchcol

import (
	"errors"
	"testing"

	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
)

// TestDropSketchColumnFamily drops the Store's column family: the Store's
// writes fail with sieve.ErrColumnFamilyDropped, and a new Store on the
// same DB starts from an empty sketch family.
func TestDropSketchColumnFamily(t *testing.T) {
	db, err := sieve.Open("/db", &sieve.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PFAdd([]byte("h"), []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := db.DropColumnFamily(s.ColumnFamily()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PFAdd([]byte("h"), []byte("c")); !errors.Is(err, sieve.ErrColumnFamilyDropped) {
		t.Fatalf("PFAdd after the drop: %v, want ErrColumnFamilyDropped", err)
	}
	s2, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s2.PFCount([]byte("h"))
	if err != nil || n != 0 {
		t.Fatalf("PFCount in the new family = %d, %v; want 0", n, err)
	}
	if _, err := s2.PFAdd([]byte("h"), []byte("z")); err != nil {
		t.Fatal(err)
	}
	if n, _ := s2.PFCount([]byte("h")); n != 1 {
		t.Fatalf("PFCount = %d, want 1", n)
	}
}
