#!/usr/bin/env bash
# NSQ's own Go bench clients (bench_writer, bench_reader from NSQ v1.3.0) against nsqlab and
# against nsqd v1.3.0 itself, on this machine, in one run: every ratio below is measured with
# one client, alternating the servers round by round (medians of ROUNDS). Never part of the
# tests. Needs NSQ's binaries (NSQ_BIN, default ../shared/nsq-v1.3.0/bin).
#   bash scripts/bench-go.sh                 # 3 rounds of 10 s runs: about 4 minutes
#   ROUNDS=5 RUNFOR=10s READFOR=5s bash scripts/bench-go.sh
#   BASE_BIN=/tmp/nsqlab-before bash scripts/bench-go.sh   # an A/B against another build
# Prints a table; with ROWS_ONLY=1 only its rows (scripts/bench.sh appends them to its own).
set -euo pipefail
cd "$(dirname "$0")/.."
NSQ_BIN=${NSQ_BIN:-../shared/nsq-v1.3.0/bin}
RUNFOR=${RUNFOR:-10s}
# The reader runs for half as long as the writer: it must not run out of backlog, or its rate
# would be the writer's count over its run rather than how fast it drains.
READFOR=${READFOR:-$(( ${RUNFOR%s} / 2 ))s}
ROUNDS=${ROUNDS:-3}
for b in nsqd bench_writer bench_reader; do
  [ -x "$NSQ_BIN/$b" ] || { echo "bench-go: $NSQ_BIN/$b is missing (set NSQ_BIN)" >&2; exit 1; }
done
cargo build --release --locked -p nsqlab --bin nsqlab >&2
B=target/release/nsqlab
TCP=127.0.0.1:4450
HTTP=127.0.0.1:4451
DATA=$(mktemp -d /tmp/nsqlab-bench-go.XXXXXX)
RES=$(mktemp -d /tmp/nsqlab-bench-go-res.XXXXXX)
pid=
stop() { [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; pid=; }
trap 'stop; rm -rf "$DATA" "$RES"' EXIT

# The servers, by name: what runs, with which flags.
declare -A SERVER=(
  [nsqlab]="$B nsqd"
  [nsqlab-mq1M]="$B nsqd --mem-queue-size=1000000"
  [nsqlab-mem]="$B nsqd --durable=false --mem-queue-size=1000000"
  [nsqd-mq1M]="$NSQ_BIN/nsqd --mem-queue-size=1000000"
  [null]="$B bench null-server"
  [null-log]="$B bench null-server --log"
)
ORDER=(nsqlab nsqlab-mq1M nsqlab-mem nsqd-mq1M null null-log)
# An A/B: another build of nsqlab (another commit's) runs durable and --durable=false in every
# round beside this one's, and the table compares them.
if [ -n "${BASE_BIN:-}" ]; then
  [ -x "$BASE_BIN" ] || { echo "bench-go: BASE_BIN=$BASE_BIN is not an executable" >&2; exit 1; }
  SERVER[base]="$BASE_BIN nsqd"
  SERVER[base-mem]="$BASE_BIN nsqd --durable=false --mem-queue-size=1000000"
  ORDER=(nsqlab base nsqlab-mq1M nsqlab-mem base-mem nsqd-mq1M null null-log)
  # Every other round the pairs swap places, so neither build always runs after the other.
  SWAPPED=(base nsqlab nsqlab-mq1M base-mem nsqlab-mem nsqd-mq1M null null-log)
fi
# The stand-ins answer publishes and have no consumers.
stand_in() { [[ $1 == null* ]]; }

start() {
  if curl -sf http://$HTTP/ping >/dev/null 2>&1; then
    echo "bench-go: something already answers on $HTTP; stop it first" >&2; exit 1
  fi
  rm -rf "${DATA:?}"/*
  case $1 in
    null) ${SERVER[$1]} --tcp-address=$TCP --http-address=$HTTP >"$RES/$1.log" 2>&1 & ;;
    null-log) ${SERVER[$1]} "$DATA/null.log" --tcp-address=$TCP --http-address=$HTTP >"$RES/$1.log" 2>&1 & ;;
    *) ${SERVER[$1]} --tcp-address=$TCP --http-address=$HTTP --data-path="$DATA" >"$RES/$1.log" 2>&1 & ;;
  esac
  pid=$!
  for _ in $(seq 100); do curl -sf http://$HTTP/ping >/dev/null && return; sleep 0.1; done
  echo "bench-go: $1 did not start" >&2; cat "$RES/$1.log" >&2; exit 1
}
# Go's bench clients log "duration: … - …mb/s - <n>ops/s - …us/op".
ops() { sed -nE 's/.* - ([0-9.]+)ops\/s.*/\1/p' | tail -1 | awk '{printf "%.0f", $1}'; }

for round in $(seq "$ROUNDS"); do
  run_order=("${ORDER[@]}")
  if [ -n "${BASE_BIN:-}" ] && [ $((round % 2)) -eq 0 ]; then run_order=("${SWAPPED[@]}"); fi
  for s in "${run_order[@]}"; do
    start "$s"
    if ! stand_in "$s"; then
      curl -sf -X POST "http://$HTTP/topic/create?topic=sub_bench" >/dev/null
      curl -sf -X POST "http://$HTTP/channel/create?topic=sub_bench&channel=ch" >/dev/null
    fi
    w=$("$NSQ_BIN/bench_writer" -nsqd-tcp-address=$TCP -runfor=$RUNFOR 2>&1 | ops)
    echo "$w" >>"$RES/$s.pub"
    # The reader drains the backlog the writer left (most of it past --mem-queue-size).
    if ! stand_in "$s"; then
      r=$("$NSQ_BIN/bench_reader" -nsqd-tcp-address=$TCP -runfor=$READFOR 2>&1 | ops)
      echo "$r" >>"$RES/$s.sub"
    fi
    stop
    echo "bench-go: round $round $s: PUB $w${r:+, SUB $r} msg/s" >&2
    r=
  done
done

median() { sort -n "$1" | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : int((v[NR/2] + v[NR/2+1]) / 2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
declare -A PUB SUB
for s in "${ORDER[@]}"; do
  PUB[$s]=$(median "$RES/$s.pub")
  [ -f "$RES/$s.sub" ] && SUB[$s]=$(median "$RES/$s.sub")
done
rows=()
row() { rows+=("$(printf '| %-80s | %s |' "$1" "$2")"); }
# How a server is named in the table: its command, without the paths.
label() {
  local c=${SERVER[$1]/#$B/nsqlab}
  [ -n "${BASE_BIN:-}" ] && c=${c/#$BASE_BIN/nsqlab (BASE_BIN)}
  echo "${c/#$NSQ_BIN\/nsqd/nsqd v1.3.0}"
}
for s in "${ORDER[@]}"; do
  row "PUB, Go bench_writer (MPUB 200 x 200 B), $(label "$s")" "${PUB[$s]} msg/s"
  [ -n "${SUB[$s]:-}" ] && row "SUB draining that for $READFOR, Go bench_reader (RDY 2500), $(label "$s")" "${SUB[$s]} msg/s"
done
row "drain: durable / --durable=false (target >= 0.90)" "$(ratio "${SUB[nsqlab]}" "${SUB[nsqlab-mem]}") (mq1M: $(ratio "${SUB[nsqlab-mq1M]}" "${SUB[nsqlab-mem]}"))"
row "drain: durable / nsqd v1.3.0 mq1M (target >= 2)" "$(ratio "${SUB[nsqlab]}" "${SUB[nsqd-mq1M]}") (mq1M: $(ratio "${SUB[nsqlab-mq1M]}" "${SUB[nsqd-mq1M]}"))"
row "PUB: durable / null-server (target >= 0.70)" "$(ratio "${PUB[nsqlab]}" "${PUB[null]}")"
row "PUB: null-server --log (writes, syncs, keeps nothing else) / null-server" "$(ratio "${PUB[null-log]}" "${PUB[null]}")"
row "PUB: durable / null-server --log" "$(ratio "${PUB[nsqlab]}" "${PUB[null-log]}")"
row "PUB: --durable=false / durable mq1M (target >= 1)" "$(ratio "${PUB[nsqlab-mem]}" "${PUB[nsqlab-mq1M]}")"
row "PUB: durable / nsqd v1.3.0 mq1M" "$(ratio "${PUB[nsqlab]}" "${PUB[nsqd-mq1M]}")"
if [ -n "${BASE_BIN:-}" ]; then
  row "A/B durable PUB: this build / BASE_BIN" "$(ratio "${PUB[nsqlab]}" "${PUB[base]}")"
  row "A/B durable drain: this build / BASE_BIN" "$(ratio "${SUB[nsqlab]}" "${SUB[base]}")"
  row "A/B --durable=false PUB: this build / BASE_BIN" "$(ratio "${PUB[nsqlab-mem]}" "${PUB[base-mem]}")"
  row "A/B --durable=false drain: this build / BASE_BIN" "$(ratio "${SUB[nsqlab-mem]}" "${SUB[base-mem]}")"
fi

if [ "${ROWS_ONLY:-}" != 1 ]; then
  echo
  echo "| Go clients, medians of $ROUNDS alternated rounds (writer $RUNFOR, reader $READFOR) | |"
  echo "|---|---|"
fi
printf '%s\n' "${rows[@]}"
