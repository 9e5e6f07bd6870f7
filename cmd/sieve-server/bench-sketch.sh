#!/usr/bin/env bash
# CF.ADD on a cuckoo filter reserved for 100M items, CMS.INCRBY on a
# 3000×30 Count-Min sketch and TOPK.ADD on a Top-K of k=50, 2000×7,
# through sieve-server and, when REDISBLOOM_SO names a RedisBloom module
# built for this redis-server, through redis-server with it, one after the
# other on the same machine: one command at a time (redis-benchmark -c 1
# -P 1: p50/p99 in ms) and pipelined (-c 50 -P 16: ops/s), with each
# server's RSS and (for sieve) data directory after each. PRELOAD CF.ADDs
# come first (pipelined). The Bloom filter has its own script,
# bench-bloom.sh. Run from the repository root:
#   cmd/sieve-server/bench-sketch.sh
#   REDISBLOOM_SO=/tmp/redisbloom/redisbloom.so cmd/sieve-server/bench-sketch.sh
set -euo pipefail
PRELOAD=${PRELOAD:-1000000}
N=${N:-200000}
ONE=${ONE:-20000}
dir=$(mktemp -d /tmp/bench-sketch.XXXXXX)
go build -o "$dir/sieve-server" ./cmd/sieve-server

rss() { ps -o rss= -p "$1" | awk '{printf "%d MB", $1/1024}'; }
csv() { redis-benchmark -p "$1" --csv "${@:2}" | tail -1; }

measure() { # name port pid data label command...
  local name=$1 port=$2 pid=$3 data=$4 label=$5
  shift 5
  echo "$name: $label one at a time (rps,avg,min,p50,p95,p99,max ms): $(csv "$port" -c 1 -P 1 -n "$ONE" -r 100000000 "$@")"
  echo "$name: $label -c 50 -P 16: $(csv "$port" -c 50 -P 16 -n "$N" -r 100000000 "$@"); RSS $(rss "$pid")${data:+; data $(du -sm "$data" | cut -f1) MB}"
}

run() { # name port pid [datadir]
  local name=$1 port=$2 pid=$3 data=${4:-}
  redis-cli -p "$port" del cf cms tk >/dev/null
  redis-cli -p "$port" cf.reserve cf 100000000 >/dev/null
  redis-cli -p "$port" cms.initbydim cms 3000 30 >/dev/null
  redis-cli -p "$port" topk.reserve tk 50 2000 7 0.9 >/dev/null
  local t0=$(date +%s)
  redis-benchmark -p "$port" -q -c 50 -P 16 -n "$PRELOAD" -r 1000000000 cf.add cf __rand_int__ >/dev/null
  echo "$name: preloaded $PRELOAD CF.ADDs in $(( $(date +%s) - t0 )) s; RSS $(rss "$pid")${data:+; data $(du -sm "$data" | cut -f1) MB}"
  measure "$name" "$port" "$pid" "$data" CF.ADD cf.add cf __rand_int__
  measure "$name" "$port" "$pid" "$data" CMS.INCRBY cms.incrby cms __rand_int__ 1
  measure "$name" "$port" "$pid" "$data" TOPK.ADD topk.add tk __rand_int__
  echo "$name: CF.INFO $(redis-cli -p "$port" cf.info cf | tr '\n' ' ')"
}

"$dir/sieve-server" -addr 127.0.0.1:6413 -dir "$dir/data" >/dev/null & spid=$!
trap 'kill $spid 2>/dev/null || true' EXIT
for i in $(seq 50); do redis-cli -p 6413 ping >/dev/null 2>&1 && break; sleep 0.1; done
run sieve-server 6413 $spid "$dir/data"
kill $spid; wait $spid || true

if [ -n "${REDISBLOOM_SO:-}" ]; then
  redis-server --port 6414 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir "$dir" --loadmodule "$REDISBLOOM_SO" --daemonize yes --pidfile "$dir/redis.pid" >/dev/null
  sleep 0.5
  run "redis+RedisBloom" 6414 "$(cat "$dir/redis.pid")"
  redis-cli -p 6414 shutdown nosave >/dev/null || true
fi
rm -rf "$dir"
