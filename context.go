package sieve

import (
	"context"

	"github.com/sievedb/sieve/internal/manifest"
)

// The long operations with a context.Context: each stops with the
// context's error at its next step and leaves the database as a failed
// call would (what it finished stays, what it had begun is removed).

// CompactContext is Compact stopping between compactions when ctx is
// done (each compaction is installed whole or not at all).
func (db *DB) CompactContext(ctx context.Context, start, end []byte) error {
	return db.compactCFContext(ctx, manifest.DefaultCFID, start, end)
}

// CompactContext is ColumnFamily.Compact with a context (see
// DB.CompactContext).
func (cf *ColumnFamily) CompactContext(ctx context.Context, start, end []byte) error {
	if err := cf.checkLive(); err != nil {
		return err
	}
	return cf.db.compactCFContext(ctx, cf.id, start, end)
}

// IngestContext is Ingest stopping between input tables when ctx is done,
// before its manifest edit: nothing is ingested, and the tables it had
// written are removed.
func (db *DB) IngestContext(ctx context.Context, paths []string) error {
	return db.ingestExcise(ctx, manifest.DefaultCFID, paths, nil)
}

// IngestContext is ColumnFamily.Ingest with a context (see
// DB.IngestContext).
func (cf *ColumnFamily) IngestContext(ctx context.Context, paths []string) error {
	if err := cf.check(); err != nil {
		return err
	}
	return cf.db.ingestExcise(ctx, cf.id, paths, nil)
}
