#!/usr/bin/env bash
# Diagnose rounds of several versions, interleaved (a shared or noisy
# machine drifts: alternating keeps the drift out of the comparison), with
# bench/diagnose.sh's timing: one generated Docker json-file input, each
# run pinned to one core with GOMAXPROCS=1, lines per CPU-second (user+sys),
# and an md5 of the findings so that a speed-up that changes them shows.
#   BIN holds the analyzers named in VERS and loggen (static builds; .gz
#   copies are unpacked first):
#   CGO_ENABLED=0 go build -o bin/an-new ./cmd/analyzer     (and an older commit's as bin/an-old)
#   CGO_ENABLED=0 go build -o bin/loggen ./bench/loggen
#   BIN=bin VERS="an-old an-new" N=7 SIZE=256M CORE=3 bash bench/diagnose-rounds.sh
# Prints one line per round and each version's median.
set -euo pipefail
BIN=${BIN:-bin}
VERS=${VERS:?name the analyzers in BIN, e.g. VERS="an-old an-new"}
N=${N:-5}
SIZE=${SIZE:-256M}
CORE=${CORE:-0}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
for f in "$BIN"/*.gz; do
  [ -e "$f" ] && gunzip -c "$f" > "$w/$(basename "${f%.gz}")" && chmod +x "$w/$(basename "${f%.gz}")"
done
for f in loggen $VERS; do
  [ -e "$w/$f" ] || cp "$BIN/$f" "$w/$f"
done
"$w/loggen" --bytes "$SIZE" --format json > "$w/node.log"
lines=$(wc -l < "$w/node.log")
echo "input: $(stat -c %s "$w/node.log") bytes, $lines lines; core $CORE"
declare -A all
for r in $(seq 1 "$N"); do
  for v in $VERS; do
    /usr/bin/time -f "%e %U %S %M" -o "$w/time" taskset -c "$CORE" env GOMAXPROCS=1 \
      "$w/$v" diagnose --json "bench-node=$w/node.log" > "$w/f-$v.json" 2> /dev/null || true
    read -r secs usr sys rss < "$w/time"
    x=$(awk -v l="$lines" -v u="$usr" -v y="$sys" 'BEGIN { printf "%.0f", l / (u + y) }')
    all[$v]="${all[$v]:-} $x"
    echo "round $r $v: $x lines/cpu-s, wall $secs s, rss $((rss / 1024)) MB, findings $(wc -l < "$w/f-$v.json") md5 $(md5sum < "$w/f-$v.json" | cut -c1-8)"
  done
done
med() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for v in $VERS; do
  echo "median $v: $(echo "${all[$v]}" | med) lines/cpu-s (rounds:${all[$v]})"
done
