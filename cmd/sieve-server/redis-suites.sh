#!/usr/bin/env bash
# Redis's own test suites (units of tests/unit) against sieve-server and
# against redis-server, in runtest's external-server mode, each unit on a
# freshly started server with a fresh data directory. Prints one row per
# unit (tests passed and failed on each server) and then, per unit, the
# tests that pass on redis-server but not on sieve-server. Exit status 1 if
# there is such a test (or a unit that did not finish on sieve-server), 0
# otherwise.
#
# Needs (nothing of Redis is in this repository, nor copied into it):
#   REDIS_SRC  a Redis source tree whose tests match the version
#              sieve-server answers as (tag 7.0.15). runtest only needs its
#              tests/ and tclsh 8.5+ (Debian's tcl); the script links
#              src/redis-server and src/redis-cli to the installed ones if
#              the tree has none (introspection runs src/redis-server for
#              its argument-parsing tests).
#   redis-server, redis-cli   on PATH (7.0.15 for the comparison).
#
# Environment (all optional):
#   UNITS         units to run (default: the list below)
#   SERVERS       "redis sieve" (default), or one of them
#   TAGS          runtest's tag filters (default: DEFAULT_TAGS below)
#   RUNTEST_OPTS  other runtest options (default: --ignore-encoding)
#   UNIT_TIMEOUT  seconds one unit may run before timeout(1) kills it (600)
#   TEST_TIMEOUT  runtest --timeout: seconds without progress (120)
#   OUT           directory for the logs (default: a new /tmp/redis-suites.*)
#   SIEVE_BIN     a sieve-server binary to use instead of building one
#   SIEVE_FLAGS   extra sieve-server flags
#
#   REDIS_SRC=/tmp/redis-src cmd/sieve-server/redis-suites.sh
set -uo pipefail
: "${REDIS_SRC:?set REDIS_SRC to a Redis 7.0.15 source tree (see cmd/sieve-server/README.md)}"
REDIS_SRC=$(cd "$REDIS_SRC" && pwd) || exit 1
[ -f "$REDIS_SRC/tests/test_helper.tcl" ] || { echo "no tests/test_helper.tcl under REDIS_SRC=$REDIS_SRC"; exit 1; }

UNITS=${UNITS:-"unit/expire unit/type/string unit/type/incr unit/keyspace unit/info-command unit/protocol unit/introspection unit/hyperloglog"}
SERVERS=${SERVERS:-"redis sieve"}
# Tests an external server cannot offer, whoever the server is
# (tests/README.md in Redis's tree; external:skip is dropped by runtest
# itself in external mode): DEBUG and OBJECT, replication, maxmemory and
# eviction settings, CONFIG RESETSTAT, RESET, SAVE to an RDB file,
# PFDEBUG/PFSELFTEST (Redis's in-memory HLL encoding), the latency
# monitor, and tests that inspect the server's process.
DEFAULT_TAGS="-needs:debug -needs:repl -needs:config-maxmemory -needs:config-resetstat -needs:reset -needs:save -needs:pfdebug -needs:latency -needs:local-process"
TAGS=${TAGS:-$DEFAULT_TAGS}
# OBJECT ENCODING checks (assert_encoding) are skipped: sieve stores no
# Redis object encodings (int, embstr, listpack...). Digest checks are off
# already, with needs:debug denied.
RUNTEST_OPTS=${RUNTEST_OPTS:-"--ignore-encoding"}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
OUT=${OUT:-$(mktemp -d /tmp/redis-suites.XXXXXX)}
mkdir -p "$OUT"

TCLSH=""
for v in 8.5 8.6 8.7; do command -v "tclsh$v" >/dev/null 2>&1 && TCLSH=$(command -v "tclsh$v"); done
[ -n "$TCLSH" ] || { echo "runtest needs tclsh 8.5 or newer (apt-get install tcl)"; exit 1; }
command -v redis-cli >/dev/null || { echo "redis-cli is not on PATH"; exit 1; }
for b in redis-server redis-cli redis-benchmark; do
  if [ ! -e "$REDIS_SRC/src/$b" ] && command -v "$b" >/dev/null; then
    ln -s "$(command -v "$b")" "$REDIS_SRC/src/$b"
  fi
done

if [[ " $SERVERS " == *" sieve "* ]] && [ -z "${SIEVE_BIN:-}" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  (cd "$root" && go build -o "$OUT/sieve-server" ./cmd/sieve-server) || { echo "building sieve-server failed"; exit 1; }
  SIEVE_BIN=$OUT/sieve-server
fi

tagargs=()
for t in $TAGS; do tagargs+=(--tags "$t"); done

free_port() {
  local p
  for _ in $(seq 200); do
    p=$(( 20000 + RANDOM % 20000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  return 1
}

spid=""
start_server() { # kind dir port
  case $1 in
    redis) redis-server --port "$3" --bind 127.0.0.1 --save '' --appendonly no \
             --dir "$2" --logfile "$2/server.log" >/dev/null 2>&1 & spid=$! ;;
    sieve) # shellcheck disable=SC2086
           "$SIEVE_BIN" -addr "127.0.0.1:$3" -dir "$2/data" ${SIEVE_FLAGS:-} >"$2/server.log" 2>&1 & spid=$! ;;
  esac
  for _ in $(seq 100); do
    [ "$(redis-cli -h 127.0.0.1 -p "$3" ping 2>/dev/null)" = PONG ] && return 0
    kill -0 "$spid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
stop_server() {
  [ -n "$spid" ] || return
  kill "$spid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  spid=""
}
trap 'stop_server' EXIT

# run_unit kind unit: writes $OUT/<kind>/<unit>.{log,ok,fail,status}.
#   .ok    names of the tests that passed, one a line
#   .fail  the name of each failed test, or "(block aborted) message" when a
#          start_server block failed outside any test
#   .status  finished | exception | timeout | killed (rc) | no server
run_unit() {
  local kind=$1 unit=$2 base dir port rc status
  base="$OUT/$kind/${unit//\//_}"
  dir="$base.server"
  rm -rf "$dir"; mkdir -p "$dir"
  port=$(free_port) || { echo "no free port" >"$base.status"; return; }
  : >"$base.ok"; : >"$base.fail"
  if ! start_server "$kind" "$dir" "$port"; then
    echo "no server" >"$base.status"; stop_server; return
  fi
  (cd "$REDIS_SRC" && timeout -k 10 "$UNIT_TIMEOUT" "$TCLSH" tests/test_helper.tcl \
      --host 127.0.0.1 --port "$port" --singledb --durable --dump-logs \
      --timeout "$TEST_TIMEOUT" $RUNTEST_OPTS "${tagargs[@]}" --single "$unit") >"$base.log" 2>&1
  rc=$?
  local alive=1
  kill -0 "$spid" 2>/dev/null || alive=0
  stop_server
  # Strip colours; keep the status lines. An [err] packet's first line is
  # "NAME in tests/unit/X.tcl" for a test, the error itself for a block.
  sed 's/\x1b\[[0-9;]*m//g' "$base.log" >"$base.plain"
  sed -n 's/^\[ok\]: \(.*\) ([0-9]* ms)$/\1/p' "$base.plain" >"$base.ok"
  awk -v unit="tests/$unit.tcl" '
    /^\[err\]: / { s = substr($0, 8); n = length(s) - length(" in " unit)
                   if (n > 0 && substr(s, n + 1) == " in " unit) print substr(s, 1, n)
                   else print "(block aborted) " s }' "$base.plain" >"$base.fail"
  if grep -q '^\[exception\]:' "$base.plain"; then status=exception
    grep -m1 -A2 '^\[exception\]:' "$base.plain" | tr '\n' ' ' | cut -c1-300 >>"$base.fail"; echo >>"$base.fail"
  elif grep -q '^\[TIMEOUT\]:' "$base.plain"; then status=timeout
    echo "(timeout) no progress for ${TEST_TIMEOUT}s in: $(sed -n 's/.*=> (IN PROGRESS) //p' "$base.plain" | head -n1)" >>"$base.fail"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then status=killed
    echo "(killed) unit ran over ${UNIT_TIMEOUT}s; last test passed: $(tail -n1 "$base.ok")" >>"$base.fail"
  elif grep -q '\[[0-9]*/[0-9]* done\]: '"$unit " "$base.plain"; then status=finished
  else status="aborted (rc $rc)"; echo "(aborted) runtest exit $rc before the unit's end" >>"$base.fail"
  fi
  [ $alive = 0 ] && { status="$status, server died"; echo "(server died) see $dir/server.log" >>"$base.fail"; }
  echo "$status" >"$base.status"
}

for kind in $SERVERS; do
  mkdir -p "$OUT/$kind"
  for unit in $UNITS; do
    printf '%-6s %-20s ' "$kind" "$unit" >&2
    t0=$(date +%s)
    run_unit "$kind" "$unit"
    b="$OUT/$kind/${unit//\//_}"
    printf '%3d ok %3d fail  %s  %ss\n' "$(wc -l <"$b.ok")" "$(wc -l <"$b.fail")" "$(cat "$b.status")" "$(( $(date +%s) - t0 ))" >&2
  done
done

# The table and the tests that pass on Redis but not on sieve-server (a
# name repeated in a unit, as in loops over encodings, counts each time).
cell() { # kind unit
  local b="$OUT/$1/${2//\//_}" s
  [ -f "$b.status" ] || { echo "-"; return; }
  s=$(cat "$b.status")
  [ "$s" = finished ] && s="" || s=" ($s)"
  echo "$(wc -l <"$b.ok") ok, $(wc -l <"$b.fail") fail$s"
}
echo
printf '| %-20s | %-28s | %-40s |\n' unit redis-server sieve-server
printf '|%s|%s|%s|\n' "----------------------" "------------------------------" "------------------------------------------"
for unit in $UNITS; do
  printf '| %-20s | %-28s | %-40s |\n' "$unit" "$(cell redis "$unit")" "$(cell sieve "$unit")"
done
bad=0
if [[ " $SERVERS " == *" redis "* && " $SERVERS " == *" sieve "* ]]; then
  for unit in $UNITS; do
    r="$OUT/redis/${unit//\//_}" s="$OUT/sieve/${unit//\//_}"
    # Redis's passes less sieve's passes, as a multiset; each marked
    # [fail] if sieve reported it failed, [not run] if sieve never got to it.
    missing=$(awk 'FNR == 1 { f++ } f == 1 { ok[$0]++; next } f == 2 { fail[$0]++; next }
                   { if (ok[$0] > 0) ok[$0]--; else { print ((fail[$0]-- > 0) ? "[fail]    " : "[not run] ") $0 } }' \
                  "$s.ok" "$s.fail" "$r.ok")
    blocks=$(grep '^(' "$s.fail")
    if [ -n "$missing$blocks" ]; then
      bad=1
      echo
      echo "== $unit: passes on redis-server, not on sieve-server"
      [ -n "$missing" ] && echo "$missing" | sed 's/^/  /'
      [ -n "$blocks" ] && echo "$blocks" | sed 's/^/  /'
    fi
  done
  echo
  echo "logs: $OUT/{redis,sieve}/<unit>.log (failure details: [err] lines)"
else
  for kind in $SERVERS; do
    for unit in $UNITS; do
      f="$OUT/$kind/${unit//\//_}.fail"
      if [ -s "$f" ]; then bad=1; echo; echo "== $kind $unit: failed"; sed 's/^/  /' "$f"; fi
    done
  done
  echo
  echo "logs: $OUT/<server>/<unit>.log"
fi
exit $bad
