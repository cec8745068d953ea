#!/usr/bin/env bash
# Load test of live mode: SHIPPERS shipper processes, each tailing its own
# generated log of BYTES, publish into one `analyzer serve` (embedded NATS).
# Prints one table: lines and the records they join into, the time to index
# them all, records indexed per second, the share of records consumed more
# than once (redelivery), slow-consumer drops logged by serve, serve's CPU
# seconds and peak RSS.
#   bash bench/load.sh                        # 8 shippers x 24M (~150k lines each)
#   SHIPPERS=8 BYTES=240M bash bench/load.sh  # the fault issue's 8 x 1.5M lines
set -euo pipefail
cd "$(dirname "$0")/.."
SHIPPERS=${SHIPPERS:-8}
BYTES=${BYTES:-24M}
TIMEOUT=${TIMEOUT:-3600}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/analyzer" ./cmd/analyzer
go build -o "$work/shipper" ./cmd/shipper
go build -o "$work/loggen" ./bench/loggen

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
nats_port=$(port)
http_port=$(port)

total=0
for i in $(seq 1 "$SHIPPERS"); do
  "$work/loggen" --bytes "$BYTES" --format plain --seed "$i" > "$work/node$i.log"
  total=$((total + $(wc -l < "$work/node$i.log")))
done

# serve under /usr/bin/time for its peak RSS (%M KiB) and CPU.
/usr/bin/time -f "%e %U %S %M" -o "$work/serve.time" \
  "$work/analyzer" serve --data-dir "$work/data" --nats-listen "127.0.0.1:$nats_port" \
  --http "127.0.0.1:$http_port" > "$work/serve.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$http_port/healthz" > /dev/null && break
  sleep 0.1
done

start=$(date +%s.%N)
for i in $(seq 1 "$SHIPPERS"); do
  "$work/shipper" --nats "nats://127.0.0.1:$nats_port" --cluster "c$i" --node "node$i" \
    --path "$work/node$i.log" --state-dir "$work/state$i" > "$work/shipper$i.log" 2>&1 &
  pids+=("$!")
done

# Done: the consumer has nothing pending or unacknowledged and the index's
# record count has not moved for 3 s (lines join into fewer records).
indexed_at=""
last=-1
still=0
while :; do
  now=$(date +%s.%N)
  if awk -v n="$now" -v s="$start" -v t="$TIMEOUT" 'BEGIN { exit !(n - s > t) }'; then
    echo "timed out after ${TIMEOUT}s" >&2
    break
  fi
  m=$(curl -fs "http://127.0.0.1:$http_port/metrics" || true)
  pending=$(echo "$m" | awk '$1 == "faultline_consumer_pending_messages" || $1 == "faultline_consumer_unacked_messages" { s += $2 } END { printf "%d", s }')
  records=$(curl -fs "http://127.0.0.1:$http_port/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("records",0))' 2>/dev/null || echo 0)
  if [ "$records" -gt 0 ] && [ "$pending" -eq 0 ] && [ "$records" -eq "$last" ]; then
    still=$((still + 1))
    [ -z "$indexed_at" ] && indexed_at=$now
    [ "$still" -ge 3 ] && break
  else
    still=0
    indexed_at=""
  fi
  last=$records
  sleep 1
done
metrics=$(curl -fs "http://127.0.0.1:$http_port/metrics")
consumed=$(echo "$metrics" | awk '$1 == "faultline_records_consumed_total" { printf "%d", $2 }')
# serve_pid is /usr/bin/time's: stop serve, its child, and let time report.
pkill -INT -P "$serve_pid" || true
wait "$serve_pid" || true
read -r _ usr sys rss < "$work/serve.time"
slow=$(echo "$metrics" | awk '$1 == "faultline_nats_errors_total" { printf "%d", $2 }')
end=${indexed_at:-$(date +%s.%N)}
printf "%-8s %10s %10s %10s %12s %13s %11s %10s %10s\n" shippers lines records indexed_s records/s redelivered% slow_drops cpu_s peakRSS
awk -v sh="$SHIPPERS" -v l="$total" -v n="$last" -v s="$start" -v e="$end" -v c="${consumed:-0}" -v sl="$slow" -v u="$usr" -v y="$sys" -v r="$rss" \
  'BEGIN { t = e - s; printf "%-8d %10d %10d %10.1f %12.0f %13.2f %11d %10.1f %8.0fMB\n", sh, l, n, t, n/t, 100*(c-n)/n, sl, u+y, r/1024 }'
