#!/usr/bin/env bash
# How long one huge MPUB holds other publishers (issue 32 item 7; a benchmark, never a test).
# A Python client sends one 5 MiB MPUB of 1 000 000 one-byte messages while
# `nsqlab bench latency` publishes at 2000 PUB/s on one connection to a topic in the MPUB's
# partition (lat1) and then in the other (lat2). Runs against release nsqlab and, when it is
# beside the repository (or NSQD names it), nsqd v1.3.0, alternated.
#   bash scripts/bench-mpub-stall.sh          # ~1 minute
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p nsqlab --bin nsqlab >&2
B=target/release/nsqlab
NSQD=${NSQD:-../shared/nsq-v1.3.0/bin/nsqd}
ROUNDS=${ROUNDS:-2}
TCP=127.0.0.1:4370
HTTP=127.0.0.1:4371
DATA=$(mktemp -d /tmp/nsqlab-mpub-stall.XXXXXX)
MPUB=$(mktemp /tmp/nsqlab-mpub.XXXXXX.py)
cat >"$MPUB" <<'PY'
import socket, struct, sys, time
host, port = sys.argv[1].rsplit(':', 1)
n = 1_000_000
body = struct.pack('>I', n) + b''.join(struct.pack('>I', 1) + b'x' for _ in range(n))
time.sleep(1.0)
m = socket.create_connection((host, int(port)))
m.sendall(b'  V2')
t = time.perf_counter()
m.sendall(b'MPUB big\n' + struct.pack('>I', len(body)) + body)
answer = m.recv(10)[8:]
print('MPUB %s in %.0f ms' % (answer.decode(), (time.perf_counter() - t) * 1000))
PY
pid=
stop() { [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; pid=; }
trap 'stop; rm -rf "$DATA" "$MPUB"' EXIT
servers=(nsqlab)
[ -x "$NSQD" ] && servers+=(nsqd)
for round in $(seq "$ROUNDS"); do
  for server in "${servers[@]}"; do
    rm -rf "${DATA:?}"/*
    if [ "$server" = nsqlab ]; then
      $B nsqd --tcp-address=$TCP --http-address=$HTTP --data-path="$DATA" >/dev/null 2>&1 &
    else
      "$NSQD" --tcp-address=$TCP --http-address=$HTTP --data-path="$DATA" >/dev/null 2>&1 &
    fi
    pid=$!
    for _ in $(seq 50); do curl -sf http://$HTTP/ping >/dev/null && break; sleep 0.1; done
    for topic in lat1 lat2; do
      python3 "$MPUB" $TCP >/tmp/nsqlab-mpub-answer.txt &
      lat=$($B bench latency --tcp-address=$TCP --topic=$topic --rate=2000 --batch-size=1 \
        --size=10 --runfor=3s --connections=1 2>&1 | tail -1 | sed 's/.*round trips - //')
      wait $!
      echo "round $round $server $topic: $lat; $(cat /tmp/nsqlab-mpub-answer.txt)"
    done
    stop
  done
done
