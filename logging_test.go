package sieve

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sievedb/sieve/vfs"
)

// logRecorder is a slog.Handler that keeps every record: level, message
// and attributes rendered as key=value.
type logRecorder struct {
	mu   sync.Mutex
	recs []loggedRecord
}

type loggedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := loggedRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = fmt.Sprint(a.Value.Any())
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, rec)
	h.mu.Unlock()
	return nil
}

// find returns the records with message msg.
func (h *logRecorder) find(msg string) []loggedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []loggedRecord
	for _, r := range h.recs {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestLogBackgroundError fails a WAL write: the DB turns read-only, and
// the logger gets one error-level record saying so, with the cause (the
// WAL and the injected error); BackgroundError returns the same error. A
// flush before it is logged at info level.
func TestLogBackgroundError(t *testing.T) {
	var armed atomic.Bool
	efs := vfs.NewErrorFS(vfs.NewMem(), vfs.ErrorOptions{Ops: vfs.OpsOf(vfs.OpWrite), Nth: 1,
		Match: func(_ vfs.Op, name string) bool { return armed.Load() && fileKind(name) == "WAL" }})
	rec := &logRecorder{}
	o := crashOptions(efs)
	o.Logger = slog.New(rec)
	db, err := Open("/db", o)
	require.NoError(t, err)
	require.NoError(t, db.Put([]byte("a"), []byte("1"), Sync))
	require.NoError(t, db.Flush())
	// The flush is logged just after Flush's waiters wake.
	require.Eventually(t, func() bool { return len(rec.find("flushed")) > 0 }, 5*time.Second, time.Millisecond, "no flush logged")
	require.Equal(t, slog.LevelInfo, rec.find("flushed")[0].level)
	require.NoError(t, db.BackgroundError())

	armed.Store(true)
	require.Error(t, db.Put([]byte("b"), []byte("2"), Sync))
	bg := db.BackgroundError()
	require.ErrorIs(t, bg, vfs.ErrInjected)
	logged := rec.find("database is read-only after an error")
	require.Len(t, logged, 1)
	require.Equal(t, slog.LevelError, logged[0].level)
	cause := logged[0].attrs["err"]
	require.Contains(t, cause, "WAL")
	require.Contains(t, cause, "input/output error")
	require.True(t, strings.Contains(bg.Error(), cause), "BackgroundError %q does not carry the logged cause %q", bg, cause)
	_ = db.Close() // reports the failure again
}

// TestMetricsFilterExpected: after a flush, the level's metrics name the
// filter policy and give the expected false-positive rate of its filter.
func TestMetricsFilterExpected(t *testing.T) {
	db, err := Open("/db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	for i := range 2000 {
		require.NoError(t, db.Put(fmt.Appendf(nil, "key%05d", i), []byte("v"), NoSync))
	}
	require.NoError(t, db.Flush())
	_, err = db.Get([]byte("key00010x")) // in the table's range: opens it
	require.ErrorIs(t, err, ErrNotFound)
	m := db.Metrics()
	var lm *LevelMetrics
	for l := range m.Levels {
		if m.Levels[l].NumFiles > 0 {
			lm = &m.Levels[l]
		}
	}
	require.NotNil(t, lm)
	require.Equal(t, defaultFilterPolicy().Name(), lm.FilterPolicy)
	require.Greater(t, lm.FilterExpectedFPR, 0.0)
	require.Less(t, lm.FilterExpectedFPR, 0.05)
	t.Logf("policy %s, expected FPR %.4f%%, %.2f bits/key", lm.FilterPolicy, 100*lm.FilterExpectedFPR, lm.FilterBitsPerKey)
}
