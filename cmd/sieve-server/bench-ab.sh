#!/bin/sh
# bench-ab.sh OLD NEW: two sieve-server binaries side by side, so that both
# see the same machine load (cmd/sieve-server/README.md, "Benchmark against redis-server"). Each
# gets a fresh directory and its own redis-benchmark, run at the same time:
#   redis-benchmark -P 16 -n 1000000 -r 100000 -q -t set,get
#   redis-benchmark -P 16 -n 1000000 -r 100000 -q PFADD hll:__rand_int__ e:__rand_int__
# It prints both PFADD rates and the CPU seconds (user+system) each server
# process used for the PFADDs.
set -e
OLD=$1
NEW=$2
[ -x "$OLD" ] && [ -x "$NEW" ] || { echo "usage: bench-ab.sh OLD-BINARY NEW-BINARY"; exit 2; }
PO=${OLD_PORT:-6341}
PN=${NEW_PORT:-6342}
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$1/stat; }
pfadd() { redis-benchmark -p "$1" -P 16 -n 1000000 -r 100000 -q PFADD hll:__rand_int__ e:__rand_int__ | tr '\r' '\n' | grep 'per second'; }
rm -rf /tmp/sieve-ab-old /tmp/sieve-ab-new
$OLD -addr 127.0.0.1:$PO -dir /tmp/sieve-ab-old > /dev/null 2>&1 &
po=$!
$NEW -addr 127.0.0.1:$PN -dir /tmp/sieve-ab-new > /dev/null 2>&1 &
pn=$!
for _ in $(seq 50); do redis-cli -p $PO ping > /dev/null 2>&1 && redis-cli -p $PN ping > /dev/null 2>&1 && break; sleep 0.1; done
redis-benchmark -p $PO -P 16 -n 1000000 -r 100000 -q -t set,get > /dev/null &
q=$!
redis-benchmark -p $PN -P 16 -n 1000000 -r 100000 -q -t set,get > /dev/null
wait $q
o0=$(cpu $po)
n0=$(cpu $pn)
pfadd $PO > /tmp/sieve-ab-old.out &
q=$!
pfadd $PN > /tmp/sieve-ab-new.out
wait $q
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "old: $(cat /tmp/sieve-ab-old.out); PFADD server CPU seconds: $(echo "$(cpu $po) - $o0" | bc)"
echo "new: $(cat /tmp/sieve-ab-new.out); PFADD server CPU seconds: $(echo "$(cpu $pn) - $n0" | bc)"
kill -TERM $po $pn
wait $po $pn || true
