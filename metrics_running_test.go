package sieve

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sievedb/sieve/vfs"
	"github.com/stretchr/testify/require"
)

// TestMetricsCompactionRunning holds a manual compaction at its first
// output table and checks Metrics.Compaction.Running counts it while it
// runs and drops back to zero once it is done.
func TestMetricsCompactionRunning(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	hit, release := make(chan struct{}), make(chan struct{})
	mem.SetDurabilityHook(func(op vfs.Op, name string) {
		if op == vfs.OpCreate && fileKind(name) == "table" && armed.CompareAndSwap(true, false) {
			hit <- struct{}{}
			<-release
		}
	})
	db, err := Open("db", &Options{FS: mem})
	require.NoError(t, err)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer db.Close()
	defer unblock()        // before Close, which waits for the held compaction
	for round := range 2 { // two overlapping L0 tables: a real merge, not a move
		for i := range 1000 {
			require.NoError(t, db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprint(round)), NoSync))
		}
		require.NoError(t, db.Flush())
	}
	require.Zero(t, db.Metrics().Compaction.Running)
	armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- db.Compact(nil, nil) }()
	<-hit
	require.Equal(t, int64(1), db.Metrics().Compaction.Running)
	unblock()
	require.NoError(t, <-done)
	require.Zero(t, db.Metrics().Compaction.Running)
}
