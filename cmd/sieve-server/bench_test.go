package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkServerPFAdd: PFADD hll:<r> e:<r> over loopback from 8 clients
// pipelining 16 deep (redis-benchmark's shape, smaller), with the
// pipeline written as one batch (the default) and command by command.
// ns/op is per PFADD.
func BenchmarkServerPFAdd(b *testing.B) {
	for _, batch := range []bool{false, true} {
		b.Run(fmt.Sprintf("batch-pipeline=%v", batch), func(b *testing.B) {
			s := startServer(b, "", func(c *Config) { c.BatchPipeline = batch })
			const clients, depth = 8, 16
			per := (b.N + clients - 1) / clients
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := 0; g < clients; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
					defer c.Close()
					for i := 0; i < per; i += depth {
						p := c.Pipeline()
						for j := i; j < i+depth; j++ {
							r := (g*per + j) * 7919 % 100000
							p.Do(ctx, "pfadd", fmt.Sprintf("hll:%d", r%10000), fmt.Sprintf("e:%d", r))
						}
						if _, err := p.Exec(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
