package main

// The cluster benchmark (issue 55): 3 sieve-server nodes in cluster mode
// against 3 etcd members (Debian's etcd-server, 3.4) on loopback, same
// machine, same run; redis-benchmark through the cluster against one
// node; and the catch-up times of a restarted and of a replaced node.
// Behind SIEVE_CLUSTER_BENCH=1 (make cluster-bench); the default
// `go test` skips it.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const benchKeys = 10000

func needClusterBench(t *testing.T) {
	if os.Getenv("SIEVE_CLUSTER_BENCH") != "1" {
		t.Skip("set SIEVE_CLUSTER_BENCH=1 (make cluster-bench)")
	}
}

// benchSeconds is each load run's length (SIEVE_CLUSTER_BENCH_SECONDS,
// 10 by default).
func benchSeconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("SIEVE_CLUSTER_BENCH_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 10 * time.Second
}

func benchValue(i int) string {
	return fmt.Sprintf("value-%08d-%s", i, strings.Repeat("x", 84))
}

// startEtcd starts n etcd members on loopback (data dirs under the test's
// temporary directory) and returns their client URLs.
func startEtcd(t *testing.T, n int) []string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (apt-get install etcd-server)")
	}
	ports := freePorts(t, 2*n)
	var initial, clients []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
		clients = append(clients, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
	}
	for i := range n {
		dir := t.TempDir()
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		cmd := exec.Command(bin, "--name", fmt.Sprintf("e%d", i+1), "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "sieve-bench", "--logger", "zap", "--log-outputs", "stderr")
		logf, err := os.Create(filepath.Join(dir, "etcd.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	return clients
}

// etcdLeader returns the client URL of the etcd leader.
func etcdLeader(t *testing.T, urls []string) string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var leader string
	retry(t, 30*time.Second, "etcd leader", func() error {
		for _, u := range urls {
			st, err := c.Status(ctx, u)
			if err != nil {
				return err
			}
			if st.Leader == st.Header.MemberId {
				leader = u
				return nil
			}
		}
		return fmt.Errorf("no leader yet")
	})
	return leader
}

// loadResult is one load run: operations done, its length and every
// operation's latency.
type loadResult struct {
	ops  int
	errs int
	dur  time.Duration
	lat  []time.Duration
}

func (r loadResult) rate() float64 { return float64(r.ops) / r.dur.Seconds() }

func (r loadResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(p*float64(len(r.lat)-1))]
}

// runLoad runs op from clients goroutines for d; op gets the goroutine's
// number and a random key number.
func runLoad(clients int, d time.Duration, op func(w, k int) error) loadResult {
	var mu sync.Mutex
	var res loadResult
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range clients {
		wg.Go(func() {
			var lat []time.Duration
			errs := 0
			for now := time.Now(); now.Before(end); {
				err := op(w, rand.IntN(benchKeys))
				t := time.Now()
				if err != nil {
					errs++
				} else {
					lat = append(lat, t.Sub(now))
				}
				now = t
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errs += errs
			mu.Unlock()
		})
	}
	wg.Wait()
	res.dur = time.Since(start)
	res.ops = len(res.lat)
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	return res
}

// etcdClients opens conns clients to the etcd leader.
func etcdClients(t *testing.T, leader string, conns int) []*clientv3.Client {
	t.Helper()
	var cs []*clientv3.Client
	for range conns {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{leader}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// benchOps is the four operations compared.
type benchOps struct {
	etcdPut, etcdGet, sievePut, sieveGet func(w, k int) error
}

func newBenchOps(ecs []*clientv3.Client, rc *redis.ClusterClient) benchOps {
	key := func(k int) string { return fmt.Sprintf("key:%06d", k) }
	return benchOps{
		etcdPut: func(w, k int) error {
			_, err := ecs[w%len(ecs)].Put(ctx, key(k), benchValue(k))
			return err
		},
		etcdGet: func(w, k int) error { // linearizable: the default
			_, err := ecs[w%len(ecs)].Get(ctx, key(k))
			return err
		},
		sievePut: func(w, k int) error { return rc.Set(ctx, key(k), benchValue(k), 0).Err() },
		sieveGet: func(w, k int) error { return rc.Get(ctx, key(k)).Err() },
	}
}

// TestClusterBench compares 3 sieve nodes with 3 etcd members: PUT and
// linearizable GET at 16, 64 and 256 clients, then redis-benchmark -P 16
// through the cluster's leader against one sieve-server node.
func TestClusterBench(t *testing.T) {
	needClusterBench(t)
	urls := startEtcd(t, 3)
	nodes := startTestCluster(t, 3)
	leader := waitLeader(t, nodes, 30*time.Second)
	eleader := etcdLeader(t, urls)
	t.Logf("sieve leader %s (%s), etcd leader %s; GOMAXPROCS %d", leader.id, leader.addr, eleader, runtime.GOMAXPROCS(0))
	ops := newBenchOps(etcdClients(t, eleader, 4), benchClusterClient(t, nodes, 256))
	preload := func(put func(w, k int) error) {
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Go(func() {
				for k := w; k < benchKeys; k += 64 {
					if err := put(w, k); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	preload(ops.etcdPut)
	preload(ops.sievePut)
	d := benchSeconds()
	fmt.Printf("%-7s %-4s %10s %10s %10s %10s %10s %10s %7s\n", "clients", "op", "etcd op/s", "p50", "p99", "sieve op/s", "p50", "p99", "ratio")
	for _, c := range []int{16, 64, 256} {
		for _, pair := range []struct {
			name      string
			etcd, sie func(w, k int) error
		}{{"PUT", ops.etcdPut, ops.sievePut}, {"GET", ops.etcdGet, ops.sieveGet}} {
			e := runLoad(c, d, pair.etcd)
			s := runLoad(c, d, pair.sie)
			fmt.Printf("%-7d %-4s %10.0f %10v %10v %10.0f %10v %10v %6.2fx  (errors: etcd %d, sieve %d)\n", c, pair.name,
				e.rate(), e.pct(0.5).Round(time.Microsecond), e.pct(0.99).Round(time.Microsecond),
				s.rate(), s.pct(0.5).Round(time.Microsecond), s.pct(0.99).Round(time.Microsecond), s.rate()/e.rate(), e.errs, s.errs)
		}
	}
	redisBenchCompare(t, leader)
}

func benchClusterClient(t *testing.T, nodes []*testNode, pool int) *redis.ClusterClient {
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: 2, DisableIdentity: true,
		MaxRedirects: 8, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		PoolSize: pool, MinIdleConns: 0, ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisBenchCompare runs redis-benchmark -P 16 (SET, GET, PFADD) on the
// cluster's leader, then on one sieve-server without cluster mode (with
// and without -sync), and prints the requests per second and the ratios.
func redisBenchCompare(t *testing.T, leader *testNode) {
	rb := needTool(t, "redis-benchmark")
	single := func(extra ...string) *testNode {
		nd := &testNode{id: "single", addr: fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]), dir: t.TempDir()}
		nd.args = append([]string{"-addr", nd.addr, "-dir", nd.dir}, extra...)
		nd.start(t)
		t.Cleanup(nd.stop)
		return nd
	}
	targets := []struct {
		name string
		nd   *testNode
		n    int
	}{{"cluster leader", leader, 30000}, {"one node", single(), 1000000}, {"one node -sync", single("-sync"), 1000000}}
	rates := map[string][]float64{}
	for _, tg := range targets {
		for _, test := range [][]string{{"-t", "set"}, {"-t", "get"}, {"pfadd", "hll:__rand_int__", "e:__rand_int__"}} {
			port := tg.nd.addr[strings.LastIndexByte(tg.nd.addr, ':')+1:]
			args := append([]string{"-h", "127.0.0.1", "-p", port, "-P", "16", "-c", "50", "-n", strconv.Itoa(tg.n), "-r", "100000", "-q"}, test...)
			out, err := exec.Command(rb, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("redis-benchmark %v: %v\n%s", args, err, out)
			}
			line := lastLine(string(out))
			fmt.Printf("redis-benchmark %-15s %s\n", tg.name, line)
			rates[tg.name] = append(rates[tg.name], rpsOf(line))
		}
	}
	for i, name := range []string{"SET", "GET", "PFADD"} {
		c := rates["cluster leader"][i]
		fmt.Printf("redis-benchmark -P 16 %-5s cluster/one node %.2fx, cluster/one node -sync %.2fx\n", name, c/rates["one node"][i], c/rates["one node -sync"][i])
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r", "\n"))
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// rpsOf reads "NAME: 123.45 requests per second, ..." from redis-benchmark -q.
func rpsOf(line string) float64 {
	f := strings.Fields(line[:max(strings.Index(line, " requests per second"), 0)])
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[len(f)-1], 64)
	return v
}
