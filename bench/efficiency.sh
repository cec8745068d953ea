#!/usr/bin/env bash
# The efficiency table: the same benchmarks on the code of BEFORE and of
# AFTER (default: the work tree), on this machine, in one run. HEAD's
# benchmark files are copied into BEFORE's tree, so both are measured the
# same way (they need the transport and finding packages: BEFORE must be
# 12f6caa or later; the default, 5400ff8, is the last before the chunk
# store index of issue 25).
#   bash bench/efficiency.sh                      # BEFORE=5400ff8, AFTER=work tree
#   LINES=2000000 INGEST=500000 LAT=600 bash bench/efficiency.sh
# Columns:
#   shipper lines/s, CPU-s/M   the shipper process on one core (BenchmarkShipper)
#   nats CPU-s/M               the JetStream server's CPU for the same lines
#   RSS MB                     the shipper's peak RSS
#   stored/raw                 bytes JetStream stores / raw log bytes
#   p50/p99 ms                 appended line -> finding on NATS (BenchmarkLineToFinding)
#   ingest lines/s, lines/CPU-s `analyzer ingest` (index + rules) of a Docker json-file log, one core
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
BEFORE=${BEFORE:-5400ff8}
LINES=${LINES:-500000}
INGEST=${INGEST:-200000}
LAT=${LAT:-300}
work=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$work/before" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

git -C "$root" worktree add --detach "$work/before" "$BEFORE" > /dev/null 2>&1
cp "$root/shipper/bench_test.go" "$work/before/shipper/bench_test.go"
cp "$root/server/latency_test.go" "$work/before/server/latency_test.go"

go build -o "$work/loggen" ./bench/loggen
"$work/loggen" --bytes "$((INGEST * 180))" --format json > "$work/ingest.log"
ingest_events=$(wc -l < "$work/ingest.log")

metric() { # metric NAME FILE: the value before the unit NAME in go test -bench output
  awk -v n="$1" '{ for (i = 2; i <= NF; i++) if ($i == n) v = $(i-1) } END { print v }' "$2"
}

measure() { # measure NAME DIR
  local name=$1 dir=$2 out=$work/$1
  mkdir -p "$out"
  (cd "$dir" && go build -o "$out/analyzer" ./cmd/analyzer && go build -o "$out/shipper" ./cmd/shipper &&
    go test -c -o "$out/shipper.test" ./shipper && go test -c -o "$out/server.test" ./server)
  # The shipper benchmark runs ./shipper's binary built from its own tree.
  (cd "$dir/shipper" && FAULTLINE_BENCH_LINES=$LINES taskset -c 1 env GOMAXPROCS=1 \
    "$out/shipper.test" -test.run '^$' -test.bench 'BenchmarkShipper$' -test.benchtime 1x -test.v) > "$out/shipper.txt" 2>&1
  (cd "$dir/server" && taskset -c 1 env GOMAXPROCS=1 \
    "$out/server.test" -test.run '^$' -test.bench 'BenchmarkLineToFinding' -test.benchtime "${LAT}x") > "$out/latency.txt" 2>&1
  /usr/bin/time -f "%e %U %S %M" -o "$out/ingest.time" taskset -c 1 env GOMAXPROCS=1 \
    "$out/analyzer" ingest -q --data-dir "$out/data" "bench=$work/ingest.log" > /dev/null 2> "$out/ingest.err"
  local nats_cpu
  nats_cpu=$(awk '/^ *bench_test.go:[0-9]+: shipper: CPU of the process/ { u = $(NF-2); s = $NF; sub(/s$/, "", u); sub(/s$/, "", s); print u + s }' "$out/shipper.txt" | tail -1)
  local secs usr sys rss
  read -r secs usr sys rss < "$out/ingest.time"
  printf "%-7s %12.0f %9.2f %9.2f %7.0f %10.3f %7.1f %7.1f %11.0f %12.0f\n" "$name" \
    "$(metric records/s "$out/shipper.txt")" "$(metric CPU-s/Mrec "$out/shipper.txt")" \
    "$(awk -v c="${nats_cpu:-0}" -v l="$LINES" 'BEGIN { print c / (l / 1e6) }')" \
    "$(metric peakRSS-MB "$out/shipper.txt")" "$(metric stored/raw "$out/shipper.txt")" \
    "$(metric p50-ms "$out/latency.txt")" "$(metric p99-ms "$out/latency.txt")" \
    "$(awk -v n="$ingest_events" -v t="$secs" 'BEGIN { print n / t }')" \
    "$(awk -v n="$ingest_events" -v u="$usr" -v s="$sys" 'BEGIN { print n / (u + s) }')"
}

echo "lines: shipper $LINES, ingest $ingest_events (Docker json-file); line->finding runs: $LAT; before: $BEFORE"
printf "%-7s %12s %9s %9s %7s %10s %7s %7s %11s %12s\n" code "ship lines/s" "ship CPU/M" "nats CPU/M" "RSS MB" stored/raw "p50 ms" "p99 ms" "ingest l/s" "l/CPU-s"
measure before "$work/before"
measure after "$root"
