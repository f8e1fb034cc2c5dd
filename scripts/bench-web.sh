#!/usr/bin/env bash
# Visualiser benchmark (never part of the tests): frames per second with 10 000 messages in a
# deferred heap, in headless Chromium (the "10 000 deferred messages" scenario).
#   bash scripts/bench-web.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-test.sh
bash scripts/build-web.sh >&2
cargo build --release --locked -p nsqlab --bin nsqlab >&2
HTTP=127.0.0.1:4451
target/release/nsqlab nsqd --durable=false --tcp-address=127.0.0.1:4450 --http-address=$HTTP \
  --www-dir="$PWD/www" >/tmp/nsqlab-bench-web.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf http://$HTTP/ping >/dev/null && break; sleep 0.1; done
echo "| visualiser (headless Chromium, 1280x800) | |"
echo "|---|---|"
NODE_TOOLS="$PWD/target/node-tools" node tests/e2e/fps.mjs "http://$HTTP"
