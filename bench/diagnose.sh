#!/usr/bin/env bash
# Benchmark of `analyzer diagnose` over generated mixed Ray/vLLM/NCCL logs
# (Docker json-file), on ONE core, at two input sizes, to show the rate and
# that peak memory does not grow with the input (streaming).
#   bash bench/diagnose.sh            # 256M and 1G
#   SIZES="64M" bash bench/diagnose.sh
#   ANALYZER=bin/analyzer LOGGEN=bin/loggen bash bench/diagnose.sh   # prebuilt (static) binaries, no Go toolchain needed
# lines/cpu-s (user+sys) is the figure that survives a busy machine; the
# target is per core, so it is the one to compare.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"256M 1G"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
analyzer=${ANALYZER:-}
loggen=${LOGGEN:-}
if [ -z "$analyzer" ]; then analyzer=$work/analyzer; go build -o "$analyzer" ./cmd/analyzer; fi
if [ -z "$loggen" ]; then loggen=$work/loggen; go build -o "$loggen" ./bench/loggen; fi
printf "%-6s %12s %10s %8s %8s %14s %16s %14s %10s\n" size bytes lines wall_s cpu_s lines/s lines/cpu-s cpu-s/Mlines peakRSS
for s in $SIZES; do
  "$loggen" --bytes "$s" --format json > "$work/node.log"
  bytes=$(stat -c %s "$work/node.log")
  lines=$(wc -l < "$work/node.log")
  # -f: %e elapsed seconds, %M peak RSS in KiB
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" taskset -c 0 env GOMAXPROCS=1 \
    "$analyzer" diagnose --json "bench-node=$work/node.log" > "$work/findings.json" 2> "$work/stderr" || true
  read -r secs usr sys rss < "$work/time"
  # lines per CPU-second is the figure that survives a busy machine.
  awk -v s="$s" -v b="$bytes" -v l="$lines" -v t="$secs" -v u="$usr" -v y="$sys" -v r="$rss" \
    'BEGIN { c = u + y; printf "%-6s %12d %10d %8.2f %8.2f %14.0f %16.0f %14.2f %8.1fMB\n", s, b, l, t, c, l/t, l/c, c*1e6/l, r/1024 }'
  echo "       findings: $(wc -l < "$work/findings.json"), warnings: $(grep -c warning "$work/stderr" || true)"
done
