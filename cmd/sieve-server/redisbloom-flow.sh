#!/usr/bin/env bash
# RedisBloom's own flow tests (tests/flow/test_overall.py, test_cuckoo.py,
# test_cms.py, test_topk.py) against sieve-server, one RLTest process per
# test (RLTest's in-class verdicts go wrong after a first failure), each
# after a FLUSHALL, in RLTest's existing-env mode. Prints one line per
# test (verdict, seconds) and the totals; logs go to $OUT.
#
# Needs (none of it is in this repository, and none of it is copied into it):
#   REDISBLOOM_SRC  a RedisBloom source tree (tag v2.4.23; its tests/flow)
#   RLTEST_SRC      an RLTest source tree (the version tests/flow/requirements.txt pins)
#   Debian's python3-redis python3-psutil python3-packaging python3-progressbar2
#   python3-distro (RLTest's imports; PyPI is not needed)
# Against redis-server with the module instead: SERVER_CMD="redis-server --port 6520
# --enable-debug-command local --loadmodule /path/to/redisbloom.so".
#   REDISBLOOM_SRC=/tmp/redisbloom/src RLTEST_SRC=/tmp/rltest cmd/sieve-server/redisbloom-flow.sh
set -uo pipefail
: "${REDISBLOOM_SRC:?set REDISBLOOM_SRC to a RedisBloom v2.4.23 source tree}"
: "${RLTEST_SRC:?set RLTEST_SRC to an RLTest source tree}"
PORT=${PORT:-6520}
TIMEOUT=${TIMEOUT:-120}
OUT=${OUT:-$(mktemp -d /tmp/redisbloom-flow.XXXXXX)}
FILES=${FILES:-"test_overall.py test_cuckoo.py test_cms.py test_topk.py"}
PY=${PY:-/usr/bin/python3}
mkdir -p "$OUT/shims" "$OUT/logs"
# tests/flow/common.py imports paella from RedisBloom's deps/readies
# submodule for the platform's name only: a stand-in.
cat > "$OUT/shims/paella.py" <<'PYEOF'
import platform as _p
class Platform:
    def __init__(self):
        self.os = _p.system().lower()
        self.arch = 'x64' if _p.machine() in ('x86_64', 'AMD64') else _p.machine()
        self.osnick = 'bookworm'
PYEOF
export PYTHONPATH="$RLTEST_SRC:$OUT/shims"

if [ -z "${SERVER_CMD:-}" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  (cd "$root" && go build -o "$OUT/sieve-server" ./cmd/sieve-server) || exit 1
  SERVER_CMD="$OUT/sieve-server -addr 127.0.0.1:$PORT -dir $OUT/data"
fi
$SERVER_CMD >"$OUT/server.log" 2>&1 & spid=$!
trap 'kill $spid 2>/dev/null' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

cd "$REDISBLOOM_SRC/tests/flow" || exit 1
pass=0 fail=0
for f in $FILES; do
  for t in $($PY -m RLTest --collect-only -t "$f" 2>/dev/null | grep -E '^test_[a-z]+:' ); do
    redis-cli -p "$PORT" flushall >/dev/null 2>&1
    log="$OUT/logs/${t//[:.]/_}.log"
    t0=$(date +%s)
    timeout "$TIMEOUT" $PY -m RLTest --env existing-env --existing-env-addr "127.0.0.1:$PORT" \
      -t "$f:${t#*:}" --log-dir "$OUT/rlt-logs" >"$log" 2>&1
    rc=$?
    v=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -A1 -F "$t:" | grep -oE '\[(PASS|FAIL|ERROR|SKIP)\]' | head -1 | tr -d '[]')
    [ $rc = 124 ] && v=TIMEOUT
    [ $rc != 0 ] && [ "$v" = PASS ] && v=FAIL
    [ -z "$v" ] && v=FAIL
    case $v in PASS) pass=$((pass+1));; SKIP) ;; *) fail=$((fail+1));; esac
    printf '%s\t%s\t%ss\n' "$v" "$t" "$(( $(date +%s) - t0 ))"
  done
done
echo "passed $pass, failed or timed out $fail (logs: $OUT/logs)"
