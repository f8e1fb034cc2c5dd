#!/usr/bin/env bash
# The main job: build the visualiser and the server, then run `nsqlab nsqd` with the
# visualiser at http://127.0.0.1:4151/ (extra arguments are passed to nsqd).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-build.sh
bash scripts/build-web.sh
cargo build --release --locked -p nsqlab --bin nsqlab
echo "nsqlab: visualiser at http://127.0.0.1:4151/ (TCP 4150, HTTP 4151; Ctrl-C to stop)" >&2
# Messages are stored under target/nsqlab-data unless a --data-path is given.
case " $* " in
  *data-path*) exec target/release/nsqlab nsqd --www-dir="$PWD/www" "$@" ;;
  *) mkdir -p target/nsqlab-data
     exec target/release/nsqlab nsqd --www-dir="$PWD/www" --data-path="$PWD/target/nsqlab-data" "$@" ;;
esac
