# Developer commands. CI runs .ci/run (vet, gofmt, go test ./..., race).
GO ?= go
FUZZTIME ?= 60s
# Go's default minimization time (60s) can eat a whole short run.
FUZZMINTIME ?= 5s

.PHONY: ab-memtable-lock cluster-bench replica-linearizability bloom-scale sketch-scale redisbloom-diff redisbloom-flow test test-race lint fuzz bench bench-peers bench-peers-rocksdb crash-long stress stress-race run tool-readme server server-test redis-hll-suite redis-suites server-bench dashboard-picture

test:
	$(GO) test ./...

test-race:
	$(GO) test -race ./...

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	@command -v staticcheck >/dev/null && staticcheck ./... || echo "staticcheck not installed; skipped"

# Runs every fuzz target for FUZZTIME each (go test -fuzz runs one target at a time).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

# The peer benchmark (bench/peers, its own module): sieve, Pebble, goleveldb, Badger.
bench-peers:
	cd bench/peers && $(GO) run . -n=1000000 -engines=sieve,sieve-cuckoo,pebble,pebble-l6f,goleveldb,badger,pebble2

# The same with RocksDB (Bloom and Ribbon) beside the others: the rocksdb
# build tag (cgo, github.com/linxGnu/grocksdb v1.7.15) against Debian's
# librocksdb-dev 7.8.3, installed here if missing (apt-get, as root or
# through sudo). Debian builds RocksDB with assertions on: its figures are
# pessimistic, its writes above all. ROCKSDB_JSON=FILE also writes JSON.
ROCKSDB_JSON ?=
bench-peers-rocksdb:
	@dpkg -s librocksdb-dev >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq librocksdb-dev; }
	cd bench/peers && $(GO) run -tags rocksdb . -n=1000000 -engines=sieve,sieve-cuckoo,pebble,pebble-l6f,goleveldb,badger,pebble2,rocksdb,rocksdb-ribbon $(if $(ROCKSDB_JSON),-json=$(ROCKSDB_JSON))

# Long crash test: 30,000 writes (the default run makes 3,000), every
# distinct crash clone reopened read-only and read-write. The figures in
# doc/testing.md come from this target.
crash-long:
	SIEVE_CRASH_OPS=30000 $(GO) test -run '^TestCrashRecovery$$' -count=1 -timeout 60m -v .

# Long concurrent stress test with the expected-state oracle (stress_test.go):
# 24 writers, 8 readers and a maintainer on 2 cores, 8 rounds of 30 s; then
# 60 s of copy-path Ingests under iterators held open (stress_copyingest_test.go).
stress:
	SIEVE_STRESS_LONG=1 $(GO) test -run 'TestStress$$|TestStressCopyIngestIterators$$' -timeout 60m -v .

# The same under the race detector, which also checks the lock order.
stress-race:
	SIEVE_STRESS_LONG=1 $(GO) test -race -run 'TestStress$$|TestStressCopyIngestIterators$$' -timeout 90m -v .

run:
	$(GO) run ./cmd/lsmbench

# The replica module's linearizability test, long form: 60 s of operations,
# every fault of the nemesis, the mutant over five seeds (replica/README.md).
# SIEVE_SEED=N replays a seed.
replica-linearizability:
	cd replica && SIEVE_LIN_LONG=1 $(GO) test -run '^TestLinearizability$$' -count=1 -timeout 30m -v .

# Regenerates the sample output in cmd/sieve/README.md, the picture
# cmd/sieve/lsm-sample.svg and README.md's "sieve lsm" sample from a newly
# generated database.
tool-readme:
	$(GO) test ./cmd/sieve -run '^TestREADME$$' -update -count=1

# sieve-server (cmd/sieve-server, its own module; go.work lets it run from here).
SERVER_ADDR ?= 127.0.0.1:6380
SERVER_DIR ?= ./sieve-data
server:
	$(GO) run ./cmd/sieve-server -addr $(SERVER_ADDR) -dir $(SERVER_DIR)

server-test:
	cd cmd/sieve-server && $(GO) vet ./... && $(GO) test ./...

# Redis's own HyperLogLog test suite against sieve-server. It needs a
# Redis source tree (REDIS_SRC; nothing of it is copied into this
# repository) whose tests match the Redis version sieve-server answers as
# (7.0.15), and tclsh (apt-get install tcl). E.g.:
#   git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis /tmp/redis-src
#   make redis-hll-suite REDIS_SRC=/tmp/redis-src
# Every test passes but the four tagged needs:pfdebug (PFDEBUG/PFSELFTEST
# inspect Redis's in-memory encoding; sieve-server answers them with an error).
REDIS_SRC ?= /tmp/redis-src
HLL_SUITE_PORT ?= 6399
redis-hll-suite:
	@test -x $(REDIS_SRC)/runtest || (echo "no Redis source tree at REDIS_SRC=$(REDIS_SRC)"; exit 1)
	$(GO) build -o /tmp/sieve-server-hll ./cmd/sieve-server
	rm -rf /tmp/sieve-server-hll-data
	/tmp/sieve-server-hll -addr 127.0.0.1:$(HLL_SUITE_PORT) -dir /tmp/sieve-server-hll-data & pid=$$!; \
	  sleep 1; \
	  (cd $(REDIS_SRC) && ./runtest --host 127.0.0.1 --port $(HLL_SUITE_PORT) --single unit/hyperloglog --singledb --tags -needs:pfdebug); rc=$$?; \
	  kill $$pid; wait $$pid; exit $$rc

# Redis's own suites (unit/expire, unit/type/string, unit/type/incr,
# unit/keyspace, unit/info-command, unit/protocol, unit/introspection,
# unit/hyperloglog) against sieve-server and against redis-server 7.0.15,
# each unit on a fresh server, with the tag filters that drop what an
# external server cannot offer (cmd/sieve-server/README.md, "Redis's own
# test suites"). Prints per unit the tests passed and failed on each and
# the tests that pass on Redis but not on sieve-server (exit status 1 if
# any). Needs REDIS_SRC (tag 7.0.15; nothing of it is copied here), tclsh
# and redis-server on PATH; not run in CI, which fetches nothing. UNITS=,
# SERVERS=sieve, OUT= and the rest: see the script's header.
redis-suites:
	@test -f $(REDIS_SRC)/tests/test_helper.tcl || (echo "no Redis source tree at REDIS_SRC=$(REDIS_SRC)"; exit 1)
	REDIS_SRC=$(REDIS_SRC) cmd/sieve-server/redis-suites.sh

# redis-benchmark against sieve-server and a redis-server on the same
# machine, in the same run (cmd/sieve-server/README.md, "Benchmark against
# redis-server").
server-bench:
	$(GO) build -o /tmp/sieve-server-bench ./cmd/sieve-server
	rm -rf /tmp/sieve-server-bench-data
	redis-server --port 6398 --save '' --appendonly no --daemonize yes --dir /tmp
	/tmp/sieve-server-bench -addr 127.0.0.1:6397 -dir /tmp/sieve-server-bench-data & pid=$$!; sleep 1; \
	  for p in 6398 6397; do \
	    echo "== port $$p"; \
	    redis-benchmark -p $$p -P 16 -n 1000000 -r 100000 -q -t set,get; \
	    redis-benchmark -p $$p -P 16 -n 1000000 -r 100000 -q PFADD hll:__rand_int__ e:__rand_int__; \
	  done; \
	  redis-cli -p 6398 shutdown nosave; kill $$pid; wait $$pid

# 3 sieve-server nodes in cluster mode against 3 etcd members (Debian's
# etcd-server 3.4: apt-get install etcd-server) on loopback, same run: PUT
# and linearizable GET at 16, 64 and 256 clients (10 s each), then
# redis-benchmark -P 16 through the cluster against one node, then the
# catch-up times of a restarted and of a replaced follower (200k keys).
# About 5 minutes (cmd/sieve-server/README.md, "Cluster mode").
cluster-bench:
	cd cmd/sieve-server && SIEVE_CLUSTER_BENCH=1 $(GO) test -run 'TestClusterBench$$|TestClusterCatchUp$$' -v -count=1 -timeout 30m .

# BF.ADD and BF.EXISTS through the sketch Store on a Bloom filter reserved
# for 100M items at 1% with BLOOM_ITEMS added (default 10M; a few minutes),
# beside one reserved for 1M: p50, p99, ops/s and disk (doc/sketches.md).
BLOOM_ITEMS ?= 10000000
bloom-scale:
	GOGC=400 SIEVE_BLOOM_SCALE=$(BLOOM_ITEMS) $(GO) test -run '^TestPagedBloomScale$$' -count=1 -v -timeout 60m ./sketchcol/

# The same for CF.ADD/CF.EXISTS on a cuckoo filter reserved for 100M items
# (CUCKOO_ITEMS added, default 1M) beside one for 1M, and for CMS.INCRBY
# (3000×30) and TOPK.ADD (k=50, 2000×7); doc/sketches.md quotes them.
CUCKOO_ITEMS ?= 1000000
sketch-scale: bloom-scale
	SIEVE_CUCKOO_SCALE=$(CUCKOO_ITEMS) $(GO) test -run '^TestPagedCuckooScale$$' -count=1 -v -timeout 60m ./sketchcol/
	SIEVE_COUNTERS_SCALE=1 $(GO) test -run '^TestPagedCountersScale$$' -count=1 -v ./sketchcol/

# sieve-server against redis-server with the RedisBloom module, command by
# command (TestRedisBloomDifferential). REDISBLOOM_SO is a module built
# from RedisBloom 2.4.23's source (the newest that loads into Redis 7.0;
# cmd/sieve-server/README.md says how); nothing of it is in this repository.
# RedisBloom's own flow tests (RLTest) against sieve-server, one process
# per test: REDISBLOOM_SRC and RLTEST_SRC are their source trees
# (cmd/sieve-server/README.md).
REDISBLOOM_SRC ?= /tmp/redisbloom/src
RLTEST_SRC ?= /tmp/rltest
redisbloom-flow:
	REDISBLOOM_SRC=$(REDISBLOOM_SRC) RLTEST_SRC=$(RLTEST_SRC) cmd/sieve-server/redisbloom-flow.sh

REDISBLOOM_SO ?= /tmp/redisbloom/redisbloom.so
redisbloom-diff:
	@test -f $(REDISBLOOM_SO) || (echo "no RedisBloom module at REDISBLOOM_SO=$(REDISBLOOM_SO)"; exit 1)
	cd cmd/sieve-server && REDISBLOOM_SO=$(REDISBLOOM_SO) $(GO) test -run '^TestRedisBloomDifferential$$' -count=1 -v .

# The picture of sieve-server's Grafana dashboard in cmd/sieve-server/README.md:
# the panels of cmd/sieve-server/grafana/sieve-dashboard.json drawn from a real
# run's /metrics scrapes (TestDashboardPicture; not Grafana), then a screenshot
# by headless Chromium (apt-get install chromium).
DASHBOARD_DURATION ?= 90s
dashboard-picture:
	cd cmd/sieve-server && SIEVE_DASHBOARD_HTML=/tmp/sieve-dashboard.html SIEVE_DASHBOARD_DURATION=$(DASHBOARD_DURATION) \
	  $(GO) test -run '^TestDashboardPicture$$' -count=1 -timeout 10m .
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1540,1420 \
	  --screenshot=cmd/sieve-server/dashboard.png file:///tmp/sieve-dashboard.html

# Issue 57's A/B of the memtable's spinning lock against sync.RWMutex
# (-tags sieve_plainlock): five alternating rounds, figures in
# doc/performance.md ("Verdicts").
ab-memtable-lock:
	$(GO) test -c -o /tmp/ab-spin.test . && $(GO) test -c -tags sieve_plainlock -o /tmp/ab-plain.test .
	@for i in 1 2 3 4 5; do \
	  if [ $$((i % 2)) = 1 ]; then order="spin plain"; else order="plain spin"; fi; \
	  for v in $$order; do echo "== round $$i $$v"; \
	    /tmp/ab-$$v.test -test.run '^$$' -test.bench 'BenchmarkGetWithWriter|BenchmarkPut$$|BenchmarkGetMemtable' -test.benchtime 300000x | grep '^Benchmark'; \
	  done; \
	done
