#!/usr/bin/env bash
# Build the visualiser into www/pkg (no tool that downloads binaries: cargo + wasm-bindgen).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --locked -p nsqlab-web --target wasm32-unknown-unknown --release
wasm-bindgen --target web --no-typescript --out-dir www/pkg --out-name web \
  target/wasm32-unknown-unknown/release/nsqlab_web.wasm
if [ -x target/node-tools/node_modules/.bin/wasm-opt ]; then
  target/node-tools/node_modules/.bin/wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
    www/pkg/web_bg.wasm -o www/pkg/web_bg.wasm
fi
printf 'visualiser: %s bytes wasm, %s bytes gzipped\n' \
  "$(stat -c %s www/pkg/web_bg.wasm)" "$(gzip -9 -c www/pkg/web_bg.wasm | wc -c)"
