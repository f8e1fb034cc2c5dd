#!/usr/bin/env bash
# The benchmark suite (never part of the tests): starts a release nsqlab nsqd on loopback and
# runs nsqlab's NSQ-compatible bench clients against it, then prints one table.
#   bash scripts/bench.sh            # ~4 minutes
#   RUNFOR=10s bash scripts/bench.sh
#   LATENCY_RUNS=0 bash scripts/bench.sh   # without the latency row's repeated runs (5)
# Where NSQ's binaries are (NSQ_BIN, default ../shared/nsq-v1.3.0/bin), it ends with
# scripts/bench-go.sh's rows: NSQ's Go clients against nsqd v1.3.0 and nsqlab.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNFOR=${RUNFOR:-10s}
cargo build --release --locked -p nsqlab --bin nsqlab >&2
B=target/release/nsqlab
TCP=127.0.0.1:4350
HTTP=127.0.0.1:4351
DATA=$(mktemp -d /tmp/nsqlab-bench-data.XXXXXX)
pid=
start() {
  rm -rf "$DATA"/*
  $B nsqd --tcp-address=$TCP --http-address=$HTTP --data-path="$DATA" "$@" >/tmp/nsqlab-bench-nsqd.log 2>&1 &
  pid=$!
  for _ in $(seq 50); do curl -sf http://$HTTP/ping >/dev/null && return; sleep 0.1; done
  echo "nsqd did not start" >&2; exit 1
}
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap 'stop; rm -rf "$DATA"' EXIT
rows=()
row() { rows+=("$(printf '| %-52s | %s |' "$1" "$2")"); echo "$1: $2" >&2; }
tput() { sed -E 's/.* - ([0-9.]+)ops\/s.*/\1/' | awk '{printf "%.0f msg/s", $1}'; }

# Memory only (as nsqd with --mem-queue-size=1000000), then our durable default (every
# message written before its OK; nsqd's default mode keeps 10000 per queue in memory, unsafe).
for mode in "--durable=false --mem-queue-size=1000000" "--mem-queue-size=1000000" ""; do
  label=${mode:-defaults (durable, mem-queue-size=10000)}
  start $mode
  curl -sf -X POST "http://$HTTP/topic/create?topic=sub_bench" >/dev/null
  curl -sf -X POST "http://$HTTP/channel/create?topic=sub_bench&channel=ch" >/dev/null
  pub=$($B bench writer --tcp-address $TCP --runfor $RUNFOR | tput)
  row "PUB (bench writer, MPUB 200 x 200 B, $label)" "$pub"
  row "SUB (bench reader, RDY 2500, $label)" "$($B bench reader --tcp-address $TCP --runfor $RUNFOR | tput)"
  if [ -z "$mode" ]; then
    half=$(( ${pub%% *} / 2 ))
    # The writer left most of its messages queued (the reader is slower): this row runs on a
    # server holding that backlog on disk, the next on a fresh one.
    row "PUB round trip at 50% of that peak ($half msg/s, MPUB 200), after the rows above" "$($B bench latency --tcp-address $TCP --runfor $RUNFOR --rate $half | sed 's/.* - p50/p50/')"
    # Consumers finishing the backlog free its segments as they go; publishers must not wait
    # for that. (A reader with RDY 2500 would saturate the broker; RDY 20 leaves it room.)
    $B bench reader --tcp-address $TCP --runfor $RUNFOR --rdy 20 >/dev/null &
    rd=$!
    row "PUB round trip at 200000 msg/s while a reader (RDY 20) drains that backlog" "$($B bench latency --tcp-address $TCP --runfor $RUNFOR --rate 200000 | sed 's/.* - p50/p50/')"
    wait $rd
    stop
    start $mode
    curl -sf -X POST "http://$HTTP/topic/create?topic=sub_bench" >/dev/null
    curl -sf -X POST "http://$HTTP/channel/create?topic=sub_bench&channel=ch" >/dev/null
    row "PUB round trip at 50% of that peak ($half msg/s, MPUB 200), fresh server" "$($B bench latency --tcp-address $TCP --runfor $RUNFOR --rate $half | sed 's/.* - p50/p50/')"
  fi
  stop
done
# One latency run says little on a noisy machine: how often the target held over several.
if [ "${LATENCY_RUNS:-5}" -gt 0 ]; then
  ab=$(RATE=$half RUNFOR=$RUNFOR bash scripts/latency-ab.sh "${LATENCY_RUNS:-5}" "$B" 2>/dev/null | tail -1)
  row "PUB round trip at 50% of that peak, ${LATENCY_RUNS:-5} fresh servers" "${ab#*: }"
fi
# What the machine itself allows: the same run against a stand-in that answers OK and keeps
# nothing (no broker, no storage behind the socket).
$B bench null-server --tcp-address $TCP --http-address $HTTP >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do curl -sf http://$HTTP/ping >/dev/null && break; sleep 0.1; done
row "PUB round trip at 50% of that peak, bench null-server" "$($B bench latency --tcp-address $TCP --runfor $RUNFOR --rate $half | sed 's/.* - p50/p50/')"
stop

# Two topics at once (bench_a and bench_b hash to different partitions of 2): one partition
# against two, durable defaults.
for parts in 1 2; do
  start --partitions=$parts
  $B bench writer --tcp-address $TCP --runfor $RUNFOR --topic bench_a --connections 1 | tput >"$DATA.a" &
  wa=$!
  $B bench writer --tcp-address $TCP --runfor $RUNFOR --topic bench_b --connections 1 | tput >"$DATA.b" &
  wb=$!
  wait $wa $wb
  row "PUB, two topics at once (2 bench writers, defaults), --partitions=$parts" "$(( $(cut -d' ' -f1 "$DATA.a") + $(cut -d' ' -f1 "$DATA.b") )) msg/s"
  rm -f "$DATA.a" "$DATA.b"
  stop
done

start
row "DPUB lateness, 2000 due over 1 s, new channel" "$($B bench lateness --tcp-address $TCP --count 2000 --window 1s | sed 's/.*) - //')"
row "DPUB lateness, same with 1 000 000 pending" "$($B bench lateness --tcp-address $TCP --count 2000 --window 1s --background 1000000 | sed 's/.*) - //')"
stop
for n in 200000 10000000; do
  start
  row "RSS per pending deferred 100 B message (N=$n)" "$($B bench deferred-mem --tcp-address $TCP --pid $pid --count $n | sed 's/.* - //')"
  stop
done
# A channel's backlog past --mem-queue-size (its bodies wait on disk, as in nsqd's disk queue).
start
row "RSS per backlog 100 B message (N=10000000, consumer at RDY 0)" "$($B bench deferred-mem --backlog --tcp-address $TCP --pid $pid --count 10000000 | sed 's/.* - //')"
stop
# The same kind of backlog across a crash: SIGKILL, then how long the restart takes and what
# it costs in memory (at the peak, and once recovered) against the RSS before it.
start
before=$($B bench deferred-mem --backlog --size 200 --tcp-address $TCP --pid $pid --count 2000000 | sed -E 's/.*-> ([0-9.]+) MiB.*/\1/')
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
t0=$(date +%s%N)
$B nsqd --tcp-address=$TCP --http-address=$HTTP --data-path="$DATA" >/tmp/nsqlab-bench-nsqd.log 2>&1 &
pid=$!
for _ in $(seq 600); do curl -sf http://$HTTP/ping >/dev/null && break; sleep 0.05; done
t1=$(date +%s%N)
mem() { awk -v k="$1:" '$1 == k {printf "%.1f", $2 / 1024}' /proc/$pid/status; }
row "restart after SIGKILL with 2000000 backlog 200 B messages" "$(( (t1 - t0) / 1000000 )) ms - RSS $(mem VmRSS) MiB (peak $(mem VmHWM) MiB; $before MiB before)"
stop

# NSQ's own Go clients against nsqlab and nsqd v1.3.0 in one run, and the ratios between them
# (see scripts/bench-go.sh; skipped without NSQ's binaries).
if [ -x "${NSQ_BIN:-../shared/nsq-v1.3.0/bin}/bench_writer" ]; then
  while IFS= read -r l; do rows+=("$l"); done < <(ROWS_ONLY=1 bash scripts/bench-go.sh)
fi

echo
echo "| benchmark | nsqlab |"
echo "|---|---|"
printf '%s\n' "${rows[@]}"
