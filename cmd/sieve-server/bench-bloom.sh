#!/usr/bin/env bash
# BF.ADD and BF.EXISTS on a Bloom filter reserved for 100M items at 1%,
# through sieve-server and, when REDISBLOOM_SO names a RedisBloom module
# built for this redis-server, through redis-server with it, one after the
# other on the same machine: one command at a time (redis-benchmark -c 1
# -P 1: p50/p99 in ms) and pipelined (-c 50 -P 16: ops/s), with each
# server's RSS and (for sieve) data directory after each step. PRELOAD
# items are added first (pipelined). Run from the repository root:
#   cmd/sieve-server/bench-bloom.sh                    # sieve only
#   REDISBLOOM_SO=/tmp/redisbloom/redisbloom.so cmd/sieve-server/bench-bloom.sh
set -euo pipefail
PRELOAD=${PRELOAD:-10000000}
N=${N:-200000}
ONE=${ONE:-20000}
CAPACITY=${CAPACITY:-100000000}
dir=$(mktemp -d /tmp/bench-bloom.XXXXXX)
go build -o "$dir/sieve-server" ./cmd/sieve-server

rss() { ps -o rss= -p "$1" | awk '{printf "%d MB", $1/1024}'; }
csv() { redis-benchmark -p "$1" --csv "${@:2}" | tail -1; }

run() { # name port pid [datadir]
  local name=$1 port=$2 pid=$3 data=${4:-}
  redis-cli -p "$port" del bf >/dev/null
  redis-cli -p "$port" bf.reserve bf 0.01 "$CAPACITY" >/dev/null
  local t0=$(date +%s)
  redis-benchmark -p "$port" -q -c 50 -P 16 -n "$PRELOAD" -r 1000000000 bf.add bf __rand_int__ >/dev/null
  echo "$name: preloaded $PRELOAD adds in $(( $(date +%s) - t0 )) s; RSS $(rss "$pid")${data:+; data $(du -sm "$data" | cut -f1) MB}"
  echo "$name: BF.INFO $(redis-cli -p "$port" bf.info bf | tr '\n' ' ')"
  for cmd in bf.add bf.exists; do
    echo "$name: $cmd one at a time (rps,avg,min,p50,p95,p99,max ms): $(csv "$port" -c 1 -P 1 -n "$ONE" -r 1000000000 $cmd bf __rand_int__)"
    echo "$name: $cmd -c 50 -P 16: $(csv "$port" -c 50 -P 16 -n "$N" -r 1000000000 $cmd bf __rand_int__); RSS $(rss "$pid")"
  done
  echo "$name: after: RSS $(rss "$pid")${data:+; data $(du -sm "$data" | cut -f1) MB}"
}

"$dir/sieve-server" -addr 127.0.0.1:6411 -dir "$dir/data" >/dev/null & spid=$!
trap 'kill $spid 2>/dev/null || true' EXIT
for i in $(seq 50); do redis-cli -p 6411 ping >/dev/null 2>&1 && break; sleep 0.1; done
run sieve-server 6411 $spid "$dir/data"
kill $spid; wait $spid || true

if [ -n "${REDISBLOOM_SO:-}" ]; then
  redis-server --port 6412 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir "$dir" --loadmodule "$REDISBLOOM_SO" --daemonize yes --pidfile "$dir/redis.pid" >/dev/null
  sleep 0.5
  run "redis+RedisBloom" 6412 "$(cat "$dir/redis.pid")"
  redis-cli -p 6412 shutdown nosave >/dev/null || true
fi
rm -rf "$dir"
