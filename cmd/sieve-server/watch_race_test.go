package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sievedb/sieve"
	"github.com/sievedb/sieve/vfs"
)

type slowFS struct{ vfs.FS }
type slowFile struct{ vfs.File }

func (f slowFS) Create(n string) (vfs.File, error) {
	x, err := f.FS.Create(n)
	if err != nil {
		return nil, err
	}
	return slowFile{x}, nil
}
func (f slowFS) OpenReadWrite(n string) (vfs.File, error) {
	x, err := f.FS.OpenReadWrite(n)
	if err != nil {
		return nil, err
	}
	return slowFile{x}, nil
}
func (f slowFile) Sync() error { time.Sleep(3 * time.Millisecond); return f.File.Sync() }

// TestReviewWatchEscape: go-redis WATCH increments racing plain INCRs on a
// server whose fsyncs are slow: every INCR must count (a write once marked
// its watchers before it was visible, and a WATCH in between missed it).
func TestReviewWatchEscape(t *testing.T) {
	s := startServer(t, "", func(c *Config) {
		c.Sync = true
		c.DBOptions = &sieve.Options{FS: slowFS{vfs.Default}}
	})
	ctx := context.Background()
	a := newClient(t, s.Addr())
	b := newClient(t, s.Addr())
	if err := a.Set(ctx, "k", "0", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const nB = 300
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < nB; i++ {
			if err := b.Incr(ctx, "k").Err(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	stop := time.Now().Add(20 * time.Second)
	okA := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for time.Now().Before(stop) {
		select {
		case <-done:
			break loop
		default:
		}
		err := a.Watch(ctx, func(tx *redis.Tx) error {
			v, err := tx.Get(ctx, "k").Int()
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "k", strconv.Itoa(v+1), 0)
				return nil
			})
			return err
		}, "k")
		switch {
		case err == nil:
			okA++
		case errors.Is(err, redis.TxFailedErr):
		default:
			t.Fatal(err)
		}
	}
	<-done
	got, err := a.Get(ctx, "k").Int()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B INCRs %d, A's committed transactions %d, final %d (want %d)", nB, okA, got, nB+okA)
	if got != nB+okA {
		t.Errorf("lost updates: %d", nB+okA-got)
	}
}
