#!/usr/bin/env bash
# Ingest throughput of each log receiver of serve (OTLP protobuf and JSON,
# Loki push protobuf and JSON) beside the shipper path, in one run:
# receiver.BenchmarkReceivers prints the table (lines/s, CPU-s per million
# lines of the ingesting process at GOMAXPROCS=1, its peak RSS, the records
# JetStream stored, bytes sent per line).
#   bash bench/receivers.sh                      # 400,000 lines in 4 files
#   LINES=1000000 NODES=4 BATCH=1000 bash bench/receivers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
FAULTLINE_BENCH_LINES=${LINES:-400000} FAULTLINE_BENCH_NODES=${NODES:-4} FAULTLINE_BENCH_BATCH=${BATCH:-1000} \
  go test ./receiver -run '^$' -bench 'BenchmarkReceivers$' -benchtime 1x > "$out" 2>&1 || { cat "$out"; exit 1; }
grep -E 'input:' "$out" | sed 's/^ *bench_test.go:[0-9]*: //'
awk '/^ *path +seconds/ { on = 1; sub(/^ +/, ""); print; next } on && NF == 7 { sub(/^ +/, ""); print; next } { on = 0 }' "$out"
