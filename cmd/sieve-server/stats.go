package main

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Redis's statistics: INFO commandstats, keyspace hits and misses,
// instantaneous_ops_per_sec and the CPU used.

// cmdStat is one shard of a command's counters (sharded by client, as
// serverState.cmds, so that cores do not share a line per command).
type cmdStat struct {
	calls, usec, failed, rejected atomic.Int64
	// latency counts the calls by duration, for /metrics' histogram
	// (calls and usec are its count and sum): bucket i holds the calls
	// that took less than latencyBound(i), the last the slower ones.
	latency [latencyBuckets]atomic.Int64
	_       [32]byte
}

// latencyBuckets is the number of latency buckets: powers of two from
// 256 ns (bucket 0) to 256·2^22 ns ≈ 1.07 s, and one for the slower calls.
const latencyBuckets = 24

// latencyBucket returns the bucket of a call that took d.
func latencyBucket(d time.Duration) int {
	return min(bits.Len64(uint64(max(d, 0))>>8), latencyBuckets-1)
}

// latencyBound returns the upper bound of bucket i (< latencyBuckets-1),
// exclusive.
func latencyBound(i int) time.Duration { return time.Duration(256) << i }

// statsState samples the commands served every 100 ms (Redis's
// instantaneous_ops_per_sec is the mean of its last 16 samples).
type statsState struct {
	mu      sync.Mutex
	samples [16]int64
	idx     int
	lastN   int64
	lastT   time.Time
	stop    chan struct{}
}

// startSampler runs the ops/s sampler until Close.
func (s *Server) startSampler() {
	s.stats.stop = make(chan struct{})
	s.stats.lastT = time.Now()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stats.stop:
				return
			case now := <-t.C:
				s.sample(now)
			}
		}
	}()
}

func (s *Server) sample(now time.Time) {
	n := s.commands()
	st := &s.stats
	st.mu.Lock()
	defer st.mu.Unlock()
	if ms := now.Sub(st.lastT).Milliseconds(); ms > 0 {
		st.samples[st.idx] = (n - st.lastN) * 1000 / ms
		st.idx = (st.idx + 1) % len(st.samples)
	}
	st.lastN, st.lastT = n, now
}

func (s *Server) opsPerSec() int64 {
	st := &s.stats
	st.mu.Lock()
	defer st.mu.Unlock()
	var sum int64
	for _, v := range st.samples {
		sum += v
	}
	return sum / int64(len(st.samples))
}

// record counts a command run by client id.
func (s *Server) record(c *command, id int64, d time.Duration, failed bool) {
	st := &s.cstats[c.idx][id%cmdShards]
	st.calls.Add(1)
	st.usec.Add(d.Microseconds())
	st.latency[latencyBucket(d)].Add(1)
	if failed {
		st.failed.Add(1)
	}
}

// reject counts a command refused before it ran (arity, NOAUTH).
func (s *Server) reject(c *command, id int64) { s.cstats[c.idx][id%cmdShards].rejected.Add(1) }

// hit counts a read of a key that exists (or not): Redis's
// keyspace_hits and keyspace_misses.
func (r *reply) hit(found bool) {
	sh := &r.s.cmds[r.cl.id%cmdShards]
	if found {
		sh.hits.Add(1)
	} else {
		sh.misses.Add(1)
	}
}

func (s *Server) hitsMisses() (h, m int64) {
	for i := range s.cmds {
		h += s.cmds[i].hits.Load()
		m += s.cmds[i].misses.Load()
	}
	return h, m
}

// resetStats is CONFIG RESETSTAT's part: command and keyspace counters.
func (s *Server) resetStats() {
	for i := range s.cmds {
		s.cmds[i].hits.Store(0)
		s.cmds[i].misses.Store(0)
	}
	for j := range s.cstats {
		for i := range s.cstats[j] {
			st := &s.cstats[j][i]
			st.calls.Store(0)
			st.usec.Store(0)
			st.failed.Store(0)
			st.rejected.Store(0)
			for b := range st.latency {
				st.latency[b].Store(0)
			}
		}
	}
	s.ks.expired.Store(0)
}

// infoCommandStats is INFO's "# Commandstats": the commands called or
// rejected since the start (or CONFIG RESETSTAT), in Redis's format.
func (s *Server) infoCommandStats() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		var calls, usec, failed, rejected int64
		for i := range s.cstats[commands[n].idx] {
			st := &s.cstats[commands[n].idx][i]
			calls += st.calls.Load()
			usec += st.usec.Load()
			failed += st.failed.Load()
			rejected += st.rejected.Load()
		}
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		lines = append(lines, fmt.Sprintf("cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			n, calls, usec, per, rejected, failed))
	}
	return lines
}

// infoCPU is INFO's "# CPU" (getrusage of the process and its children).
func infoCPU() []string {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) string {
		return strconv.FormatInt(int64(t.Sec), 10) + "." + fmt.Sprintf("%06d", int64(t.Usec))
	}
	return []string{
		"used_cpu_sys:" + tv(self.Stime),
		"used_cpu_user:" + tv(self.Utime),
		"used_cpu_sys_children:" + tv(children.Stime),
		"used_cpu_user_children:" + tv(children.Utime),
	}
}
