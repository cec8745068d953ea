#!/usr/bin/env bash
# The probes of issue 14 (item 4) against `analyzer ui` over a generated
# index of ~600k events (two nodes of internal/loggen traffic): each probe
# alone, then all of them three times at once, then a walk through every
# hit by cursor. For each: HTTP status, latency and the ui's peak RSS
# (VmHWM, reset before each probe through /proc/PID/clear_refs).
#   bash bench/queries.sh                  # 600k events, --memory-limit 1GiB
#   EVENTS=100000 LIMIT=512MiB bash bench/queries.sh
#   PIN=0 bash bench/queries.sh            # ui on every core (default: core 1, GOMAXPROCS=1)
# The issue's figures before the limits: q=/.*/ 20 s and RSS 0.8 -> 6 GB;
# q=*s0*1* 16 s, 3.2 GB; from=599000 9.5 s; /api/context 3-9 s, +2.6 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${EVENTS:-600000}
LIMIT=${LIMIT:-1GiB}
PIN=${PIN:-1}
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/analyzer" ./cmd/analyzer
go build -o "$work/loggen" ./bench/loggen
# ~1.15 lines an event (tracebacks and other multi-line records).
half=$((EVENTS * 115 / 200))
for n in 1 2; do
  # loggen writes until --bytes; head takes the lines wanted (one record a
  # line but for the odd traceback).
  { "$work/loggen" --seed "$n" --bytes 1G --format json || true; } | head -n "$half" > "$work/spark-$n.log"
done
pin=()
if [ "$PIN" = 1 ]; then pin=(taskset -c 1 env GOMAXPROCS=1); fi
start=$(date +%s.%N)
"${pin[@]}" "$work/analyzer" ingest -q --data-dir "$work/data" "spark-1=$work/spark-1.log" "spark-2=$work/spark-2.log" > /dev/null
events=$("$work/analyzer" search --data-dir "$work/data" -n 0 2>&1 >/dev/null | awk '/ of / {print $3; exit}')
echo "index: $events events, built in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", e-s}') s; ui --memory-limit $LIMIT${pin:+ (core 1, GOMAXPROCS=1)}"

"${pin[@]}" "$work/analyzer" ui --data-dir "$work/data" --http 127.0.0.1:0 --memory-limit "$LIMIT" > "$work/ui.out" 2> "$work/ui.err" &
pid=$!
base=""
for _ in $(seq 1 300); do
  base=$(grep -o 'http://[^ ]*/' "$work/ui.out" 2>/dev/null | head -1 | sed 's|/$||') || true
  [ -n "$base" ] && break
  sleep 0.1
done
[ -n "$base" ] || { echo "ui did not start:"; cat "$work/ui.err"; exit 1; }
grep -o 'msg="memory limit".*' "$work/ui.err" || true

rssMB() { awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$pid/status"; }
resetPeak() { echo 5 > "/proc/$pid/clear_refs" 2>/dev/null || true; }
printf "%-34s %7s %10s %10s  %s\n" probe status latency peakRSS answer
row() { printf "%-34s %7s %9.2fs %8sMB  %s\n" "$1" "$2" "$3" "$(rssMB)" "$4"; }
probe() { # name path
  resetPeak
  read -r code secs < <(curl -s -o "$work/body" -w '%{http_code} %{time_total}\n' "$base$2")
  row "$1" "$code" "$secs" "$(head -c 70 "$work/body" | tr -d '\n')"
}
id=$(curl -s "$base/api/search?size=1" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
oldest=$(curl -s "$base/api/search?size=1&sort=time" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
ui='&size=50&facets=1&histogram=60&highlight=1' # what the UI asks with a query
echo "idle: $(rssMB) MB"
probe 'q=/.*/' "/api/search?q=%2F.%2A%2F$ui"
probe 'q=*s0*1*' "/api/search?q=%2As0%2A1%2A$ui"
probe 'from=599000' "/api/search?from=599000$ui"
probe '/api/context (newest)' "/api/context/$id"
probe '/api/context (oldest)' "/api/context/$oldest"
probe 'q=error (a plain query)' "/api/search?q=error$ui"

# All of the issue's probes three times at once.
resetPeak
start=$(date +%s.%N)
for _ in 1 2 3; do
  for p in "/api/search?q=%2F.%2A%2F$ui" "/api/search?q=%2As0%2A1%2A$ui" "/api/search?from=599000$ui" "/api/context/$id"; do
    curl -s -o /dev/null -w '%{http_code}\n' "$base$p" >> "$work/codes" &
  done
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true
row '12 probes at once (wall)' "$(sort "$work/codes" | uniq -c | awk '{s = s (NR > 1 ? "," : "") $1 "x" $2} END {print s}')" \
  "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {print e-s}')" ""

# Every hit by cursor, 1,000 a page: the deep pages cost what the first does.
resetPeak
after=""
pages=0
maxs=0
last=0
start=$(date +%s.%N)
while :; do
  secs=$(curl -s -o "$work/body" -w '%{time_total}' "$base/api/search?size=1000${after:+&after=$after}")
  pages=$((pages + 1))
  maxs=$(awk -v a="$maxs" -v b="$secs" 'BEGIN {print (b > a) ? b : a}')
  last=$secs
  after=$(grep -o '"next":"[^"]*"' "$work/body" | cut -d'"' -f4) || true
  [ -n "$after" ] || break
done
row "walk by cursor: $pages pages (wall)" 200 "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {print e-s}')" \
  "slowest page ${maxs}s, last page ${last}s"
