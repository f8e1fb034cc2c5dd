#!/usr/bin/env bash
# The main job: build the server and run `nsqlab nsqd` with the visualiser at
# http://127.0.0.1:4151/ (extra arguments are passed to nsqd). The page comes built, inside
# the binary: no WebAssembly toolchain is needed (scripts/build-web.sh rebuilds it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-build.sh
cargo build --release --locked -p nsqlab --bin nsqlab
echo "nsqlab: visualiser at http://127.0.0.1:4151/ (TCP 4150, HTTP 4151; Ctrl-C to stop)" >&2
# Messages are stored under target/nsqlab-data unless a --data-path is given.
case " $* " in
  *data-path*) exec target/release/nsqlab nsqd "$@" ;;
  *) mkdir -p target/nsqlab-data
     exec target/release/nsqlab nsqd --data-path="$PWD/target/nsqlab-data" "$@" ;;
esac
