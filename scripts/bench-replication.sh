#!/usr/bin/env bash
# Replication benchmark (never part of the tests): NSQ's Go bench_writer against nsqd v1.3.0
# (unreplicated), nsqlab (unreplicated, durable) and a group of three nsqlab nodes
# (--replicas=3, on this machine, loopback), alternating round by round (medians of ROUNDS);
# then nsqd and the group publishing while NSQ's bench_reader consumes (the log compacting
# as it goes); then the failover time: kill -9 of the leader under load to the first
# message consumed from the new leader (nsq_tail connecting to whichever node serves, found
# by polling GET /raft/status every 50 ms).
#   bash scripts/bench-replication.sh            # 3 rounds of 10 s: about 4 minutes
#   ROUNDS=5 RUNFOR=10s bash scripts/bench-replication.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NSQ_BIN=${NSQ_BIN:-../shared/nsq-v1.3.0/bin}
RUNFOR=${RUNFOR:-10s}
ROUNDS=${ROUNDS:-3}
for b in nsqd bench_writer nsq_tail; do
  [ -x "$NSQ_BIN/$b" ] || { echo "bench-replication: $NSQ_BIN/$b is missing (set NSQ_BIN)" >&2; exit 1; }
done
cargo build --release --locked -p nsqlab --bin nsqlab >&2
B=target/release/nsqlab
DATA=$(mktemp -d /tmp/nsqlab-bench-rep.XXXXXX)
pids=()
stop() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$DATA"' EXIT
PEERS="1@127.0.0.1:4521,2@127.0.0.1:4522,3@127.0.0.1:4523"

wait_http() { for _ in $(seq 100); do curl -sf "http://$1/ping" >/dev/null && return; sleep 0.1; done; echo "no answer on $1" >&2; exit 1; }
node() { # node ID: one member of the group, data in $DATA/nID
  mkdir -p "$DATA/n$1"
  $B nsqd --node-id="$1" --replicas=3 --raft-address=127.0.0.1:452"$1" --raft-peer=$PEERS \
    --tcp-address=127.0.0.1:450"$1" --http-address=127.0.0.1:451"$1" --data-path="$DATA/n$1" \
    >"$DATA/n$1.log" 2>&1 &
  pids+=($!)
}
# The node that serves (its number), waiting for one.
leader() {
  for _ in $(seq 400); do
    for i in 1 2 3; do
      if curl -s "http://127.0.0.1:451$i/raft/status" 2>/dev/null | grep -q '"serving":true'; then echo "$i"; return; fi
    done
    sleep 0.05
  done
  echo "no leader" >&2; exit 1
}
start() { # start NAME: the server(s); sets ADDR, the TCP address to publish to
  stop
  rm -rf "${DATA:?}"/*
  if curl -sf http://127.0.0.1:4451/ping >/dev/null 2>&1; then
    echo "bench-replication: something already answers on 127.0.0.1:4451; stop it first" >&2; exit 1
  fi
  case $1 in
    nsqd) "$NSQ_BIN/nsqd" --tcp-address=127.0.0.1:4450 --http-address=127.0.0.1:4451 --data-path="$DATA" >"$DATA/log" 2>&1 &
      pids+=($!); wait_http 127.0.0.1:4451; ADDR=127.0.0.1:4450; HTTP=127.0.0.1:4451 ;;
    nsqlab) $B nsqd --tcp-address=127.0.0.1:4450 --http-address=127.0.0.1:4451 --data-path="$DATA" >"$DATA/log" 2>&1 &
      pids+=($!); wait_http 127.0.0.1:4451; ADDR=127.0.0.1:4450; HTTP=127.0.0.1:4451 ;;
    nsqlab-3-replicas) node 1; node 2; node 3; l=$(leader); ADDR="127.0.0.1:450$l"; HTTP="127.0.0.1:451$l" ;;
  esac
}
ops() { sed -nE 's/.* - ([0-9.]+)ops\/s.*/\1/p' | tail -1 | awk '{printf "%.0f", $1}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A RATES
for round in $(seq "$ROUNDS"); do
  for s in nsqd nsqlab nsqlab-3-replicas; do
    start "$s"
    r=$("$NSQ_BIN/bench_writer" -nsqd-tcp-address="$ADDR" -runfor="$RUNFOR" 2>&1 | ops)
    echo "round $round: $s $r msg/s" >&2
    RATES[$s]="${RATES[$s]:-} $r"
  done
done
stop
echo "| PUB, bench_writer (200-byte messages, MPUB of 200), median of $ROUNDS × $RUNFOR | msg/s | vs nsqd |"
echo "|---|---|---|"
base=$(echo "${RATES[nsqd]}" | tr ' ' '\n' | grep . | median)
for s in nsqd nsqlab nsqlab-3-replicas; do
  m=$(echo "${RATES[$s]}" | tr ' ' '\n' | grep . | median)
  echo "| $s | $m | $(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.2f", a / b}') |"
done

# Publishing and consuming at once: bench_reader (its own channel, created first) beside
# bench_writer, so the log compacts as it goes (nothing consumed, it never does).
declare -A BOTH
for round in $(seq "$ROUNDS"); do
  for s in nsqd nsqlab-3-replicas; do
    start "$s"
    curl -sf -X POST "http://$HTTP/topic/create?topic=sub_bench" >/dev/null
    curl -sf -X POST "http://$HTTP/channel/create?topic=sub_bench&channel=ch" >/dev/null
    "$NSQ_BIN/bench_reader" -nsqd-tcp-address="$ADDR" -runfor="$RUNFOR" >"$DATA/reader.out" 2>&1 &
    reader=$!
    sleep 0.3
    r=$("$NSQ_BIN/bench_writer" -nsqd-tcp-address="$ADDR" -runfor="$RUNFOR" 2>&1 | ops)
    wait "$reader"
    echo "round $round: $s publishing $r msg/s while consuming $(ops <"$DATA/reader.out") msg/s" >&2
    BOTH[$s]="${BOTH[$s]:-} $r"
  done
done
stop
echo
echo "| PUB while bench_reader consumes, median of $ROUNDS × $RUNFOR | msg/s | vs nsqd |"
echo "|---|---|---|"
base=$(echo "${BOTH[nsqd]}" | tr ' ' '\n' | grep . | median)
for s in nsqd nsqlab-3-replicas; do
  m=$(echo "${BOTH[$s]}" | tr ' ' '\n' | grep . | median)
  echo "| $s | $m | $(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.2f", a / b}') |"
done

# Failover: a backlog, then kill -9 of the leader and the time to the first message consumed
# from the new one.
start nsqlab-3-replicas
"$NSQ_BIN/bench_writer" -nsqd-tcp-address="$ADDR" -runfor=2s >/dev/null 2>&1
old=$(leader)
pid=${pids[$((old - 1))]}
t0=$(date +%s.%N)
kill -9 "$pid"
new=
for _ in $(seq 400); do
  for i in 1 2 3; do
    [ "$i" = "$old" ] && continue
    if curl -s "http://127.0.0.1:451$i/raft/status" 2>/dev/null | grep -q '"serving":true'; then new=$i; break 2; fi
  done
  sleep 0.05
done
[ -n "$new" ] || { echo "no new leader" >&2; exit 1; }
timeout 20 "$NSQ_BIN/nsq_tail" --nsqd-tcp-address="127.0.0.1:450$new" --topic=sub_bench -n 1 >/dev/null 2>&1
t1=$(date +%s.%N)
echo
echo "| failover (3 replicas, default settings) | |"
echo "|---|---|"
echo "| kill -9 of the leader (node $old) to the first message consumed from the new one (node $new) | $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f s", b - a}') |"
