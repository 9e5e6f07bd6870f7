package sieve

import (
	"context"
	"fmt"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestContextCancel: a cancelled context stops Compact, Checkpoint and
// Ingest with its error, leaving the database as it was (no checkpoint
// directory, nothing ingested, the data readable), and the same calls
// succeed afterwards.
func TestContextCancel(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	db, err := Open("/db", &Options{FS: fs, MemTableSize: 64 << 10})
	require.NoError(t, err)
	defer db.Close()
	for i := range 2000 {
		require.NoError(t, db.Put(fmt.Appendf(nil, "k%05d", i), []byte("v"), nil))
	}
	writeExternal(t, fs, "/ext/t", "k", 100, 200, "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := extScan(t, db)

	require.ErrorIs(t, db.CompactContext(ctx, nil, nil), context.Canceled)
	require.ErrorIs(t, db.CheckpointContext(ctx, "/cp"), context.Canceled)
	_, err = fs.Stat("/cp")
	require.Error(t, err, "a cancelled checkpoint leaves no directory")
	require.ErrorIs(t, db.IngestContext(ctx, []string{"/ext/t"}), context.Canceled)
	require.Equal(t, before, extScan(t, db), "nothing changed")
	require.NoError(t, db.CheckInvariants(true))

	require.NoError(t, db.CompactContext(context.Background(), nil, nil))
	require.NoError(t, db.CheckpointContext(context.Background(), "/cp"))
	require.NoError(t, db.IngestContext(context.Background(), []string{"/ext/t"}))
	require.Equal(t, "v150.x", string(extGet(t, db, "k00150")))
}

// countdownCtx is a context whose Err turns to Canceled after n calls:
// it cancels an operation part way through.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestContextCancelMidway cancels a Checkpoint after its first table and
// an Ingest after its first input: the partial checkpoint directory and
// the tables the Ingest wrote are removed, nothing is ingested.
func TestContextCancelMidway(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	db, err := Open("/db", &Options{FS: fs, MemTableSize: 64 << 10})
	require.NoError(t, err)
	defer db.Close()
	for i := range 3000 {
		require.NoError(t, db.Put(fmt.Appendf(nil, "k%05d", i), []byte("v"), nil))
	}
	require.NoError(t, db.Flush())
	require.Greater(t, db.Metrics().Levels[0].NumFiles+db.Metrics().Levels[6].NumFiles, int64(1))
	require.ErrorIs(t, db.CheckpointContext(&countdownCtx{Context: context.Background(), n: 2}, "/cp"), context.Canceled)
	for _, d := range []string{"/cp", "/cp.checkpoint-tmp"} {
		_, err := fs.Stat(d)
		require.Error(t, err, "%s left behind", d)
	}
	writeExternal(t, fs, "/ext/a", "k", 100, 200, "a")
	writeExternal(t, fs, "/ext/b", "k", 300, 400, "b")
	before := extScan(t, db)
	files := func() int { l, _ := fs.List("/db"); return len(l) }
	n := files()
	require.ErrorIs(t, db.IngestContext(&countdownCtx{Context: context.Background(), n: 2}, []string{"/ext/a", "/ext/b"}), context.Canceled)
	require.Equal(t, before, extScan(t, db))
	require.Equal(t, n, files(), "the Ingest's tables were removed")
	require.NoError(t, db.CheckInvariants(true))
}
