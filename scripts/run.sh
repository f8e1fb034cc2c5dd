#!/usr/bin/env bash
# The main job: build nsqlab and run it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --locked -p nsqlab
exec target/release/nsqlab "${@:-demo}"
