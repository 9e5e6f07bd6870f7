package main

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTransactionsSurviveRestart: clients run transactions (MULTI/EXEC)
// and plain pipelines against a -sync server, which is killed (SIGKILL),
// restarted, then stopped cleanly (SIGTERM) and restarted again. After
// each restart every acknowledged write is present, and every
// transaction is all or nothing: transaction n of client g sets tx:g:n,
// increments ctr:g and adds n to the HLL h:g, so ctr:g must equal the
// number of tx:g:* keys present, and those must be 1..ctr:g.
func TestTransactionsSurviveRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	cmd, addr := startSyncChild(t, dir)
	const clients = 4
	acked := make([]int, clients)     // transactions acknowledged per client
	pipeAcked := make([]int, clients) // pipelines acknowledged per client
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, fmt.Sprintf("tx:%d:%d", g, n), n, 0)
					p.Incr(ctx, fmt.Sprintf("ctr:%d", g))
					p.PFAdd(ctx, fmt.Sprintf("h:%d", g), n)
					return nil
				})
				if err != nil {
					return // the server was killed
				}
				_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, fmt.Sprintf("p:%d:%d:a", g, n), n, 0)
					p.Set(ctx, fmt.Sprintf("p:%d:%d:b", g, n), n, 0)
					return nil
				})
				mu.Lock()
				acked[g] = n
				if err == nil {
					pipeAcked[g] = n
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	for start := time.Now(); time.Since(start) < time.Second || (minOf(acked, &mu) < 20 && time.Since(start) < time.Minute); {
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	close(stop)
	wg.Wait()
	_ = cmd.Wait()

	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		cmd, addr = startSyncChild(t, dir)
		c := newClient(t, addr)
		total := 0
		for g := 0; g < clients; g++ {
			total += checkTransactions(t, c, g, acked[g], pipeAcked[g], how)
		}
		t.Logf("after %s: %d transactions and %d pipelines acknowledged, %d transactions present, all whole", how, sum(acked), sum(pipeAcked), total)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("server exited on SIGTERM with %v", err)
		}
	}
}

// checkTransactions checks client g's transactions and pipelines and
// returns how many transactions are present.
func checkTransactions(t *testing.T, c *redis.Client, g, acked, pipeAcked int, how string) int {
	t.Helper()
	ctr, err := c.Get(ctx, fmt.Sprintf("ctr:%d", g)).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if ctr < acked {
		t.Fatalf("after %s: client %d had %d transactions acknowledged, ctr is %d", how, g, acked, ctr)
	}
	for n := 1; n <= ctr+1; n++ {
		v, err := c.Get(ctx, fmt.Sprintf("tx:%d:%d", g, n)).Result()
		switch {
		case n <= ctr && (err != nil || v != strconv.Itoa(n)):
			t.Fatalf("after %s: client %d: ctr %d but tx:%d:%d is %q, %v: a transaction was applied in part", how, g, ctr, g, n, v, err)
		case n == ctr+1 && !errors.Is(err, redis.Nil):
			t.Fatalf("after %s: client %d: ctr %d but tx:%d:%d exists: a transaction was applied in part", how, g, ctr, g, n)
		}
	}
	if hll, _ := c.PFCount(ctx, fmt.Sprintf("h:%d", g)).Result(); ctr > 0 && (float64(hll) < 0.9*float64(ctr) || float64(hll) > 1.1*float64(ctr)+2) {
		t.Fatalf("after %s: client %d: PFCOUNT %d for %d transactions", how, g, hll, ctr)
	}
	for n := 1; n <= pipeAcked; n++ {
		for _, s := range []string{"a", "b"} {
			if v, err := c.Get(ctx, fmt.Sprintf("p:%d:%d:%s", g, n, s)).Result(); err != nil || v != strconv.Itoa(n) {
				t.Fatalf("after %s: acknowledged pipeline write p:%d:%d:%s is %q, %v", how, g, n, s, v, err)
			}
		}
	}
	return ctr
}

func minOf(xs []int, mu *sync.Mutex) int {
	mu.Lock()
	defer mu.Unlock()
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
