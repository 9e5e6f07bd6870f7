#!/bin/sh
# bench-restart.sh [ROUNDS]: `make server-bench`'s measurement, ROUNDS
# times (default 3), each round both servers one after the other, then a
# restart check of sieve-server's data (cmd/sieve-server/README.md,
# "Benchmark against redis-server"). Run from the repository root.
#
# Each round: a fresh redis-server (--save '' --appendonly no) and a fresh
# sieve-server (default flags), each measured with
#   redis-benchmark -P 16 -n 1000000 -r 100000 -q -t set,get
#   redis-benchmark -P 16 -n 1000000 -r 100000 -q PFADD hll:__rand_int__ e:__rand_int__
#   redis-benchmark -P 16 -n 1000000 -q PFADD hll:__rand_int__ e:__rand_int__
# (the last is the issue's command as written: without -r redis-benchmark
# leaves __rand_int__ as it is, one key and one element, so every PFADD
# after the first changes nothing)
# (and the CPU seconds each server process used for the PFADDs), then
# on sieve-server: PFCOUNT of 1,000 HLL keys and a digest of GET of
# every key, SIGTERM, a restart on the same directory, and the same again:
# the round fails unless both are equal.
set -e
ROUNDS=${1:-3}
RP=${REDIS_PORT:-6398}
SP=${SIEVE_PORT:-6397}
DATA=/tmp/sieve-server-bench-data
# SIEVE_BIN: a sieve-server binary to measure (default: build this tree's).
BIN=${SIEVE_BIN:-/tmp/sieve-server-bench}
[ -n "$SIEVE_BIN" ] || go build -o $BIN ./cmd/sieve-server

# cpu prints the CPU seconds (user+system) process $1 has used.
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$1/stat; }

# bench PORT PID: the three commands against the server on PORT, and the
# CPU seconds its process PID used for the 1,000,000 PFADDs.
bench() {
	redis-benchmark -p "$1" -P 16 -n 1000000 -r 100000 -q -t set,get | tr '\r' '\n' | grep 'per second'
	a=$(cpu "$2")
	redis-benchmark -p "$1" -P 16 -n 1000000 -r 100000 -q PFADD hll:__rand_int__ e:__rand_int__ | tr '\r' '\n' | grep 'per second'
	echo "PFADD server CPU seconds: $(echo "$(cpu "$2") - $a" | bc)"
	redis-benchmark -p "$1" -P 16 -n 1000000 -q PFADD hll:__rand_int__ e:__rand_int__ | tr '\r' '\n' | grep 'per second' | sed 's/^PFADD/PFADD (no -r, one key)/'
}

# state prints the PFCOUNT of the first 1,000 HLL keys (sorted), then an
# md5 of GET of every key (sorted), and the number of keys.
state() {
	redis-cli -p $SP --scan --pattern 'hll:*' | sort | head -1000 | sed 's/^/PFCOUNT /' | redis-cli -p $SP | md5sum | cut -c1-12
	redis-cli -p $SP --scan | sort | sed 's/^/GET /' | redis-cli -p $SP | md5sum | cut -c1-12
	redis-cli -p $SP dbsize
}

start_sieve() {
	$BIN -addr 127.0.0.1:$SP -dir $DATA > /tmp/sieve-server-bench.log 2>&1 &
	pid=$!
	for _ in $(seq 50); do redis-cli -p $SP ping > /dev/null 2>&1 && return; sleep 0.1; done
	echo "sieve-server did not start"; exit 1
}

for round in $(seq "$ROUNDS"); do
	rm -rf $DATA
	rm -f /tmp/redis-server-bench.pid
	redis-server --port $RP --save '' --appendonly no --daemonize yes --dir /tmp --pidfile /tmp/redis-server-bench.pid > /dev/null
	for _ in $(seq 50); do [ -s /tmp/redis-server-bench.pid ] && break; sleep 0.1; done
	start_sieve
	echo "== round $round: $(uptime)"
	echo "-- redis-server"; bench $RP "$(cat /tmp/redis-server-bench.pid)"
	echo "-- sieve-server"; bench $SP $pid
	redis-cli -p $RP shutdown nosave > /dev/null || true
	before=$(state | tr '\n' ' ')
	kill -TERM $pid; wait $pid || true
	start_sieve
	after=$(state | tr '\n' ' ')
	kill -TERM $pid; wait $pid || true
	echo "-- restart: pfcount-md5 get-md5 keys: before $before after $after"
	if [ "$before" != "$after" ]; then echo "RESTART CHECK FAILED"; exit 1; fi
done
