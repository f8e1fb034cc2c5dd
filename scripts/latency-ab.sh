#!/usr/bin/env bash
# How often a build meets the latency target (p99 PUB round trip <= 1 ms at 50% of peak, with
# MPUB 200 x 200 B) on a fresh durable server, run after run. One run says little on a noisy
# virtual machine (the same build meets it in 2 of 7 to 8 of 10 runs from one hour to the
# next), so compare builds or flags by alternating them in one batch:
#
#   bash scripts/latency-ab.sh 10 target/release/nsqlab
#   bash scripts/latency-ab.sh 15 target/release/nsqlab "/tmp/other/nsqlab --sync-every=1000"
#   bash scripts/latency-ab.sh 8 target/release/nsqlab null
#
# Each argument after the round count is a server binary (built beforehand, e.g. with
# `cargo build --release -p nsqlab`; a relative path is from the repository's root) with its
# extra nsqd flags, or `null`: CLIENT's `bench null-server`, which answers every publish and
# keeps nothing, the floor this host and client allow at the time; every round runs each
# once, in order. RATE (1250000), RUNFOR (10s) and
# CLIENT (the binary running `bench latency`; the first binary's by default) can be
# set. Never part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:?usage: latency-ab.sh ROUNDS "BINARY [FLAGS...]" ...}
shift
[ $# -gt 0 ] || set -- target/release/nsqlab
RATE=${RATE:-1250000}
RUNFOR=${RUNFOR:-10s}
if [ -z "${CLIENT:-}" ]; then
  for cfg in "$@" target/release/nsqlab; do
    read -r -a first <<<"$cfg"
    [ "$cfg" = null ] || { CLIENT=${first[0]}; break; }
  done
fi
TCP=127.0.0.1:4650
HTTP=127.0.0.1:4651
out=$(mktemp /tmp/nsqlab-latency-ab.XXXXXX)
pid=
data=
stop() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
  [ -z "$data" ] || rm -rf "$data"
  data=
}
trap 'stop; rm -f "$out"' EXIT
if ss -ltn | grep -qE ":(4650|4651) "; then
  echo "port 4650 or 4651 is in use" >&2
  exit 1
fi
for r in $(seq "$rounds"); do
  for cfg in "$@"; do
    read -r -a cmd <<<"$cfg"
    data=$(mktemp -d /tmp/nsqlab-latency-data.XXXXXX)
    if [ "$cfg" = null ]; then
      "$CLIENT" bench null-server --tcp-address=$TCP --http-address=$HTTP >/dev/null 2>&1 &
    else
      "${cmd[0]}" nsqd --tcp-address=$TCP --http-address=$HTTP --data-path="$data" "${cmd[@]:1}" \
        >/dev/null 2>&1 &
    fi
    pid=$!
    for _ in $(seq 100); do curl -sf http://$HTTP/ping >/dev/null && break; sleep 0.1; done
    line=$("$CLIENT" bench latency --tcp-address $TCP --runfor "$RUNFOR" --rate "$RATE")
    stop
    p99=$(sed -E 's/.* - p99 ([0-9.]+)ms.*/\1/' <<<"$line")
    printf '%s\t%s\n' "$cfg" "$p99" >>"$out"
    printf 'round %s: %s: %s\n' "$r" "$cfg" "$(sed 's/.* - p50/p50/' <<<"$line")" >&2
  done
done
echo
python3 - "$out" "$@" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
for cfg in sys.argv[2:]:
    p = sorted(float(x) for c, x in rows if c == cfg)
    met = sum(x <= 1.0 for x in p)
    print(f"{cfg}: target met in {met} of {len(p)} runs; p99 (ms) median {statistics.median(p):.3f}, "
          f"sorted {' '.join(f'{x:.2f}' for x in p)}")
PY
