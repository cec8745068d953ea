#!/usr/bin/env bash
# The post-mortem search table of issue 25: `analyzer ingest` of Docker
# json-file logs (internal/loggen, 4 nodes), then `analyzer ui`'s HTTP API
# asked the four kinds of query, beside the figures Grafana Loki 3.7.6 had
# on the same kind of input in the issue's run (a quiet 16-core machine, 2M
# lines, 364 MB). Loki is not run here: github.com/grafana/loki/v3 is
# AGPL-3.0, which this project does not take in (go-partial.tsv marks it
# not-to-use), so its column is the issue's measured figures and the ratio
# compares this run with them.
#   bash bench/postmortem.sh                      # the work tree, LINES=2000000
#   LINES=400000 ROUNDS=3 bash bench/postmortem.sh
#   BEFORE=85f6c08 bash bench/postmortem.sh       # also the code of BEFORE: same input, same run
#   BIN=DIR bash bench/postmortem.sh              # prebuilt DIR/analyzer[-before] and DIR/loggen (no Go needed)
# Rows:
#   ingest lines/s            LINES lines (4 files at once) on every core the machine has
#   CPU-s per million lines   ROUNDS ingests of 200k lines on cores 0 and 1 (GOMAXPROCS=2): the median
#   peak memory (200k)        the largest peak RSS of those rounds
#   disk / raw                bytes under --data-dir after the LINES ingest / the input's bytes
#   query p50s                RUNS answers of /api/search each after one warm-up (wall time of the request)
# Needs bash, python3 and coreutils; Go unless BIN is given.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
LINES=${LINES:-2000000}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-21}
BEFORE=${BEFORE:-}
BIN=${BIN:-}
work=$(mktemp -d)
cleanup() {
  if [ -n "$BEFORE" ] && [ -z "$BIN" ]; then git -C "$root" worktree remove --force "$work/before-src" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# m.py: run a command and report its wall time, CPU and peak RSS; time
# HTTP requests.
cat > "$work/m.py" <<'EOF'
import json, os, statistics, subprocess, sys, time, urllib.request
def run(cores, cmd):
    env = dict(os.environ)
    pre = None
    if cores:
        cs = {int(c) for c in cores.split(",")}
        env["GOMAXPROCS"] = str(len(cs))
        pre = lambda: os.sched_setaffinity(0, cs)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, preexec_fn=pre, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("%s: exit status %d" % (cmd[0], status))
    print("%.3f %.3f %d" % (time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
def http(url, runs):
    def get():
        t = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as r:
            body = r.read()
        return time.perf_counter() - t, json.loads(body).get("total", 0)
    _, total = get()  # warm-up
    ts = [get()[0] for _ in range(runs)]
    print("%.2f %d" % (statistics.median(ts) * 1000, total))
if sys.argv[1] == "run":
    run(sys.argv[2], sys.argv[3:])
else:
    http(sys.argv[2], int(sys.argv[3]))
EOF
py() { python3 "$work/m.py" "$@"; }

if [ -n "$BIN" ]; then
  loggen=$BIN/loggen
else
  go build -o "$work/loggen" ./bench/loggen
  loggen=$work/loggen
fi
per=$((LINES / 4))
for n in 1 2 3 4; do
  # loggen writes until --bytes; head takes the lines wanted.
  { "$loggen" --seed "$n" --bytes 4G --format json || true; } | head -n "$per" > "$work/spark-$n.log"
done
{ "$loggen" --seed 5 --bytes 1G --format json || true; } | head -n 200000 > "$work/round.log"
round_lines=$(wc -l < "$work/round.log")
raw=$(cat "$work"/spark-*.log | wc -c)
lines=$(cat "$work"/spark-*.log | wc -l)
# The needle: Ray's resource name of a node a placement request asked for,
# as the issue searched node:192.168.200.12 (10 hits there).
needle=$(grep -oh 'node:192\.168\.200\.12\b' "$work"/spark-*.log | head -1 || true)
if [ -z "$needle" ]; then
  needle=$(grep -oh "node:[0-9]*\.[0-9]*\.[0-9]*\.[0-9]*" "$work"/spark-*.log | sort | uniq -c | sort -n | head -1 | awk '{print $2}')
fi
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
queries=("q=$(enc "$needle")&size=50" "q=NCCL&size=50" "q=$(enc '/nccl.*/')&size=50" "size=-1&facets=1")

measure() { # measure NAME ANALYZER: prints name|lps|cpu|rss|disk|4 p50s|4 totals
  local name=$1 bin=$2 out=$work/$1
  mkdir -p "$out"
  local cpus=() rss=0 wall cpu m
  for _ in $(seq 1 "$ROUNDS"); do
    rm -rf "$out/round"
    read -r wall cpu m < <(py run 0,1 "$bin" ingest -q --data-dir "$out/round" "spark-1=$work/round.log")
    cpus+=("$(awk -v c="$cpu" -v n="$round_lines" 'BEGIN {printf "%.2f", c / n * 1e6}')")
    rss=$((m > rss ? m : rss))
  done
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  read -r wall _ _ < <(py run "" "$bin" ingest -q --data-dir "$out/data" \
    spark-1="$work/spark-1.log" spark-2="$work/spark-2.log" spark-3="$work/spark-3.log" spark-4="$work/spark-4.log")
  local lps disk
  lps=$(awk -v n="$lines" -v s="$wall" 'BEGIN {printf "%.0f", n / s}')
  disk=$(du -sb "$out/data" | awk -v r="$raw" '{printf "%.3f", $1 / r}')

  "$bin" ui --data-dir "$out/data" --http 127.0.0.1:0 > "$out/ui.out" 2> "$out/ui.err" &
  local pid=$! base=""
  for _ in $(seq 1 600); do
    base=$(grep -o 'http://[^ ]*/' "$out/ui.out" 2>/dev/null | head -1 | sed 's|/$||') || true
    [ -n "$base" ] && break
    sleep 0.1
  done
  [ -n "$base" ] || { echo "$name: ui did not start:" >&2; cat "$out/ui.err" >&2; exit 1; }
  local row="$name|$lps|$cpu|$((rss / 1024))|$disk" totals="" t n
  for q in "${queries[@]}"; do
    read -r t n < <(py http "$base/api/search?$q" "$RUNS")
    row="$row|$t"
    totals="$totals $n"
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$row|$totals"
}

rows=()
if [ -n "$BEFORE" ]; then
  if [ -n "$BIN" ]; then
    before=$BIN/analyzer-before
  else
    git -C "$root" worktree add --detach "$work/before-src" "$BEFORE" > /dev/null 2>&1
    (cd "$work/before-src" && go build -o "$work/analyzer-before" ./cmd/analyzer)
    before=$work/analyzer-before
  fi
  rows+=("$(measure before "$before")")
fi
if [ -n "$BIN" ]; then
  after=$BIN/analyzer
else
  go build -o "$work/analyzer" ./cmd/analyzer
  after=$work/analyzer
fi
rows+=("$(measure after "$after")")

echo "input: $lines Docker json-file lines, $((raw / 1000000)) MB, 4 nodes (loggen seeds 1-4); $(nproc) cores; CPU rounds: 200k lines, cores 0,1"
echo "needle: $needle"
echo "Loki was not run: github.com/grafana/loki/v3 is AGPL-3.0, which this project does not take in; its column is"
echo "the issue's measured figures (Loki 3.7.6, a quiet 16-core machine, 2M lines, 364 MB; the middle of each range),"
echo "and the ratio compares this run with them."
printf '%s\n' "${rows[@]}" | awk -F'|' '
  BEGIN {
    split("ingest lines/s|ingest CPU-s per million lines (2 cores)|peak memory during ingest (200k), MB|bytes on disk / raw input|needle query p50, ms|common word (NCCL) p50, ms|regex (/nccl.*/) p50, ms|count by node over everything p50, ms", label, "|")
    split("258000|6.6|257|0.087|1380|841|522|3900", loki, "|")
  }
  { for (i = 2; i <= 9; i++) v[NR, i] = $i; name[NR] = $1; hits[NR] = $10 }
  END {
    printf "%-44s", ""
    for (r = 1; r <= NR; r++) printf " %12s", name[r]
    printf " %12s %12s\n", "Loki (issue)", name[NR] "/Loki"
    for (i = 2; i <= 9; i++) {
      printf "%-44s", label[i - 1]
      for (r = 1; r <= NR; r++) printf " %12s", v[r, i]
      printf " %12s %11.3fx\n", loki[i - 1], v[NR, i] / loki[i - 1]
    }
    for (r = 1; r <= NR; r++) print name[r] " hits (needle, NCCL, regex, all):" hits[r]
  }'
