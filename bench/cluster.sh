#!/usr/bin/env bash
# Scale-out benchmark: the same partitioned stream read by 1, 2 and 3
# analyzers (`serve --nats URLS --partitions N`). Prints one table: analyzers,
# events (what a search finds, each once), seconds from the analyzers' start
# until all are indexed, events/s, the analyzers' CPU seconds per million
# events (utime + stime from /proc, startup included), reindexed% (events
# the indexes hold beyond those: indexed by an analyzer that then gave the
# partition up while the members joined), the NATS servers' CPU seconds over
# the same run, and the partitions each analyzer owned at the end.
#
# The NATS cluster is external: three real nats-server processes (the
# version go.mod pins), as in docker-compose.cluster.yml. So every row reads
# the same three-server, three-replica stream with the same partitions, and
# only the number of analyzers changes (an embedded cluster would change the
# NATS servers with them, and one analyzer cannot form one). The stream is
# filled once (CLUSTERS shippers, one cluster each, tailing loggen output, as
# bench/load.sh ships), the servers' stores are copied aside, and each row
# starts three servers on a fresh copy: the analyzers replay the stream
# from its start, so a row measures reading, rules and indexing only.
#
#   bash bench/cluster.sh                     # 12 clusters x 2M, analyzers pinned to CPU 1
#   SIZE=16M CPUS=0,1 bash bench/cluster.sh   # bigger, both cores
#
# SIZE: loggen bytes per cluster [2M]; CLUSTERS [12]; PARTITIONS [12];
# ANALYZERS: the rows [1 2 3]; CPUS: taskset CPU list of the analyzers and
# servers [1] (a shared machine: on one CPU, events/s cannot grow with the
# analyzers, CPU-s per million events shows what sharing costs);
# TIMEOUT: seconds per row [1800]; STALL: seconds without a new event found
# after which a row is given up, saying which partitions are held but not
# read [120].
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-2M}
CLUSTERS=${CLUSTERS:-12}
PARTITIONS=${PARTITIONS:-12}
ANALYZERS=${ANALYZERS:-1 2 3}
CPUS=${CPUS:-1}
TIMEOUT=${TIMEOUT:-1800}
STALL=${STALL:-120}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# An array, not a function: a function run with & is a subshell, and $!
# would be the subshell's PID instead of the server's.
pin=(taskset -c "$CPUS")
go build -o "$work/analyzer" ./cmd/analyzer
go build -o "$work/shipper" ./cmd/shipper
go build -o "$work/loggen" ./bench/loggen
CGO_ENABLED=0 go build -o "$work/nats-server" github.com/nats-io/nats-server/v2

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
client=() route=() monitor=()
for i in 0 1 2; do client+=("$(port)"); route+=("$(port)"); monitor+=("$(port)"); done
routes="nats://127.0.0.1:${route[0]},nats://127.0.0.1:${route[1]},nats://127.0.0.1:${route[2]}"
urls="nats://127.0.0.1:${client[0]},nats://127.0.0.1:${client[1]},nats://127.0.0.1:${client[2]}"
nats_pids=()
# start_nats STORE: three routed JetStream servers, stores under STORE/sN.
start_nats() {
  nats_pids=()
  for i in 0 1 2; do
    "${pin[@]}" "$work/nats-server" -n "s$i" -a 127.0.0.1 -p "${client[$i]}" -m "${monitor[$i]}" -js -sd "$1/s$i" \
      --cluster_name bench --cluster "nats://127.0.0.1:${route[$i]}" --routes "$routes" > "$work/nats$i.log" 2>&1 &
    nats_pids+=("$!")
    pids+=("$!")
  done
  for i in 0 1 2; do
    for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:${monitor[$i]}/healthz?js-enabled-only=true" > /dev/null && break; sleep 0.1; done
  done
}
stop() { for p in "$@"; do kill -INT "$p" 2>/dev/null || true; done; for p in "$@"; do wait "$p" 2>/dev/null || true; done; }
# cpu PID...: the processes' CPU seconds so far (utime + stime).
tck=$(getconf CLK_TCK)
cpu() { for p in "$@"; do awk '{ print $14 + $15 }' "/proc/$p/stat"; done | awk -v t="$tck" '{ s += $1 } END { printf "%.2f", s / t }'; }
metric() { curl -fs "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d", s }'; }
# progress HTTPPORT...: the events a search finds (on the first analyzer,
# which asks the others: each event once), the events the analyzers' indexes
# hold (more when partitions moved while they started: the one that gave a
# partition up keeps what it indexed of it), the partitions owned, the
# messages of owned partitions not read yet, and the events read but not
# yet flushed to an index.
progress() {
  python3 - "$@" <<'PY'
import json, sys, urllib.request
docs = own = lag = ilag = 0
try:
    base = "http://127.0.0.1:%s" % sys.argv[1]
    found = json.load(urllib.request.urlopen(base + "/api/search?size=1", timeout=10))["total"]
    for h in sys.argv[1:]:
        base = "http://127.0.0.1:%s" % h
        hz = json.load(urllib.request.urlopen(base + "/healthz", timeout=5))
        docs += hz.get("records", 0)
        ilag += hz.get("index_lag", 0)
        for l in urllib.request.urlopen(base + "/metrics", timeout=5).read().decode().splitlines():
            if l.startswith("faultline_partitions_owned "):
                own += int(float(l.split()[1]))
            elif l.startswith("faultline_partition_lag_messages{"):
                lag += int(float(l.split()[1]))
except Exception:
    print("0 0 0 -1 -1")
    sys.exit()
print(found, docs, own, lag, ilag)
PY
}
# unread HTTPPORT...: per analyzer, the partitions it holds a lease on but
# reads nothing of (a lease without a lag gauge: no reader runs).
unread() {
  python3 - "$@" <<'PY'
import re, sys, urllib.request
for h in sys.argv[1:]:
    try:
        m = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % h, timeout=5).read().decode()
    except Exception as e:
        print("analyzer on :%s: %s" % (h, e))
        continue
    held = set(re.findall(r'^faultline_partition_lease_epoch\{partition="(\d+)"\}', m, re.M))
    read = set(re.findall(r'^faultline_partition_lag_messages\{partition="(\d+)"\}', m, re.M))
    print("analyzer on :%s: partitions held %s, held but not read %s" % (h, sorted(held, key=int), sorted(held - read, key=int)))
PY
}
# start_analyzers N DIR: N analyzers sharing the partitions, members aN.
an_pids=() an_http=()
start_analyzers() {
  an_pids=() an_http=()
  for i in $(seq 1 "$1"); do
    h=$(port)
    "${pin[@]}" "$work/analyzer" serve --nats "$urls" --partitions "$PARTITIONS" --member "a$i" --data-dir "$2/a$i" \
      --http "127.0.0.1:$h" --log-level warn > /dev/null 2> "$2/a$i.log" &
    an_pids+=("$!") an_http+=("$h")
    pids+=("$!")
  done
}

# Input: one generated log per cluster.
for i in $(seq 1 "$CLUSTERS"); do
  "$work/loggen" --bytes "$SIZE" --format plain --seed "$i" > "$work/c$i.log"
done
lines=$(cat "$work"/c*.log | wc -l)

# Fill: an analyzer creates the partitioned stream (only analyzers do),
# then stops; the shippers fill the stream until its message count holds
# still for 3 s; the stores are kept as the base of every row.
start_nats "$work/fill"
mkdir -p "$work/fillan"
start_analyzers 1 "$work/fillan"
for _ in $(seq 1 300); do [ "$(metric "${an_http[0]}" faultline_partitions_owned)" -eq "$PARTITIONS" ] && break; sleep 0.1; done
stop "${an_pids[@]}"
ship_pids=()
for i in $(seq 1 "$CLUSTERS"); do
  "${pin[@]}" "$work/shipper" --nats "$urls" --cluster "c$i" --node "node$i" --path "$work/c$i.log" \
    --state-dir "$work/ship$i" > "$work/shipper$i.log" 2>&1 &
  ship_pids+=("$!")
  pids+=("$!")
done
stream_msgs() {
  curl -fs "http://127.0.0.1:${monitor[0]}/jsz?streams=true" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(s["state"]["messages"] for a in d.get("account_details", []) for s in a.get("stream_detail", []) if s["name"] == "FAULTLINE_LOGS"))' 2>/dev/null || echo 0
}
last=-1 still=0
while [ "$still" -lt 3 ]; do
  sleep 1
  n=$(stream_msgs)
  if [ "$n" -gt 0 ] && [ "$n" -eq "$last" ]; then still=$((still + 1)); else still=0; fi
  last=$n
done
stop "${ship_pids[@]}"
stop "${nats_pids[@]}"
echo "stream filled: $lines lines of $CLUSTERS clusters in $last messages" >&2

printf "%-9s %10s %9s %10s %12s %11s %11s %s\n" analyzers events seconds events/s cpu_s/Mev reindexed% nats_cpu_s partitions
want=""
for n in $ANALYZERS; do
  row="$work/row$n"
  mkdir -p "$row"
  cp -r "$work/fill" "$row/nats"
  start_nats "$row/nats"
  nats_cpu0=$(cpu "${nats_pids[@]}")
  start=$(date +%s.%N)
  start_analyzers "$n" "$row"
  # Done: all partitions owned, nothing left to read in any of them or to
  # flush to an index, and the indexes' total is the first row's (which
  # has to hold still for 3 s).
  done_at="" last=-1 since="" moved=$start note=""
  while :; do
    now=$(date +%s.%N)
    if awk -v n="$now" -v s="$start" -v t="$TIMEOUT" 'BEGIN { exit !(n - s > t) }'; then
      echo "row $n: timed out after ${TIMEOUT}s" >&2
      note=" (timed out)"
      break
    fi
    read -r total docs owned lag ilag < <(progress "${an_http[@]}")
    [ "$total" -ne "$last" ] && moved=$now
    if awk -v n="$now" -v s="$moved" -v t="$STALL" 'BEGIN { exit !(n - s > t) }'; then
      echo "row $n: stalled, no new event found for ${STALL}s: $total found, $owned partitions owned, lag $lag, unflushed $ilag" >&2
      unread "${an_http[@]}" >&2
      note=" (stalled)"
      break
    fi
    if [ "$total" -gt 0 ] && [ "$owned" -eq "$PARTITIONS" ] && [ "$lag" -eq 0 ] && [ "$ilag" -eq 0 ]; then
      [ "$total" = "$want" ] && { done_at=$now; break; }
      if [ "$total" -ne "$last" ]; then
        since=$now
      elif [ -z "$want" ] && awk -v n="$now" -v s="$since" 'BEGIN { exit !(n - s >= 3) }'; then
        done_at=$since
        break
      fi
    else
      since=$now
    fi
    last=$total
    sleep 0.5
  done
  end=${done_at:-$(date +%s.%N)}
  acpu=$(cpu "${an_pids[@]}")
  ncpu=$(awk -v a="$(cpu "${nats_pids[@]}")" -v b="$nats_cpu0" 'BEGIN { printf "%.1f", a - b }')
  split=""
  for h in "${an_http[@]}"; do split="$split${split:+/}$(metric "$h" faultline_partitions_owned)"; done
  split="$split$note"
  [ -z "$want" ] && want=$total
  [ "$total" = "$want" ] || echo "row $n: $total events indexed, the first row indexed $want" >&2
  awk -v n="$n" -v e="$total" -v x="$docs" -v s="$start" -v t="$end" -v c="$acpu" -v nc="$ncpu" -v p="$split" \
    'BEGIN { d = t - s; printf "%-9d %10d %9.1f %10.0f %12.1f %11.1f %11s %s\n", n, e, d, e / d, c / e * 1e6, 100 * (x - e) / e, nc, p }'
  stop "${an_pids[@]}"
  stop "${nats_pids[@]}"
  rm -rf "$row"
done
