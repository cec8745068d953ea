#!/usr/bin/env bash
# Ingest CPU rounds on 2 cores, two versions interleaved (a loaded or
# shared machine drifts: alternating keeps the drift out of the ratio):
#   - analyzer ingest of 200k Docker json-file lines (internal/loggen seed 5,
#     as bench/postmortem.sh's CPU rounds), pinned to cores 0 and 1 with
#     GOMAXPROCS=2: CPU-s per million lines and peak RSS;
#   - BenchmarkIngest -benchtime 200000x of each test binary, likewise pinned.
# BIN holds analyzer, analyzer-before, loggen, index.test, index-before.test
# (static builds; .gz copies are unpacked first); ANALYZERS and TESTS name
# others (TESTS="index-before index-mid index" for index-mid.test too):
#   CGO_ENABLED=0 go build -o bin/analyzer ./cmd/analyzer
#   CGO_ENABLED=0 go test -c -o bin/index.test ./index      (and the -before ones from the older commit)
#   BIN=bin ROUNDS=5 BENCH_ROUNDS=3 bash bench/rounds.sh
# Prints one line per round and the medians. Needs python3 for the peak RSS.
set -euo pipefail
BIN=${BIN:-bin}
ROUNDS=${ROUNDS:-5}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
ANALYZERS=${ANALYZERS:-analyzer-before analyzer}
TESTS=${TESTS:-index-before index}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$BIN"/*.gz; do
  [ -e "$f" ] && gunzip -c "$f" > "$work/$(basename "${f%.gz}")" && chmod +x "$work/$(basename "${f%.gz}")"
done
for f in loggen $ANALYZERS $(printf '%s.test ' $TESTS); do
  [ -e "$work/$f" ] || cp "$BIN/$f" "$work/$f"
done
{ "$work/loggen" --seed 5 --bytes 1G --format json || true; } | head -n 200000 > "$work/round.log"
n=$(wc -l < "$work/round.log")
run() { # run BIN: prints CPU-s per million lines and peak RSS (MB)
  rm -rf "$work/d"
  if command -v python3 > /dev/null; then
    python3 - "$1" "$work/d" "$work/round.log" "$n" <<'PY'
import os, subprocess, sys
env = dict(os.environ, GOMAXPROCS="2")
p = subprocess.Popen([sys.argv[1], "ingest", "-q", "--data-dir", sys.argv[2], "spark-1=" + sys.argv[3]], env=env,
                     preexec_fn=lambda: os.sched_setaffinity(0, {0, 1}), stdout=subprocess.DEVNULL)
_, st, ru = os.wait4(p.pid, 0)
assert st == 0, st
print("%.2f %d" % ((ru.ru_utime + ru.ru_stime) / int(sys.argv[4]) * 1e6, ru.ru_maxrss // 1024))
PY
  else
    local t
    t=$( { TIMEFORMAT='%U %S'; time taskset -c 0,1 env GOMAXPROCS=2 "$1" ingest -q --data-dir "$work/d" "spark-1=$work/round.log" > /dev/null; } 2>&1 | tail -1)
    awk -v t="$t" -v n="$n" 'BEGIN {split(t, a, " "); printf "%.2f -\n", (a[1] + a[2]) / n * 1e6}'
  fi
}
declare -A cpu rss
for r in $(seq 1 "$ROUNDS"); do
  for v in $ANALYZERS; do
    read -r c m < <(run "$work/$v")
    cpu[$v]="${cpu[$v]:-} $c"
    rss[$v]="${rss[$v]:-} $m"
    echo "round $r $v: $c CPU-s per million lines, peak RSS $m MB"
  done
done
med() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for v in $ANALYZERS; do
  echo "median $v: $(echo "${cpu[$v]}" | med) CPU-s per million lines ($n lines), peak RSS$(echo "${rss[$v]}" | tr ' ' '\n' | sort -n | tail -1) MB"
done
cd "$work"
for r in $(seq 1 "$BENCH_ROUNDS"); do
  for v in $TESTS; do
    echo "bench round $r $v: $(taskset -c 0,1 env GOMAXPROCS=2 "./$v.test" -test.run XXX -test.bench Ingest -test.benchtime 200000x | grep ^Benchmark)"
  done
done
