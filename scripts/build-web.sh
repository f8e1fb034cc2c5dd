#!/usr/bin/env bash
# Build the visualiser into www/pkg (no tool that downloads binaries: cargo + wasm-bindgen).
# www/pkg is committed, and built into the binary: after changing core/ or web/ (web/raft/
# too), run this and commit www/pkg (the test command fails while it is stale).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-web.sh
# module <crate> <name> [cargo flags]: build a crate for the browser into www/pkg/<name>.js and
# <name>_bg.wasm.
module() {
  local crate=$1 name=$2
  shift 2
  cargo build --locked -p "$crate" "$@" --target wasm32-unknown-unknown --profile wasm-release
  wasm-bindgen --target web --no-typescript --out-dir www/pkg --out-name "$name" \
    "target/wasm32-unknown-unknown/wasm-release/${crate//-/_}.wasm"
  if [ -x target/node-build/node_modules/.bin/wasm-opt ]; then
    # --low-memory-unused: addresses below 1 KiB are never used (rustc lays the 1 MiB stack
    # out first, growing down towards 0, data after it), so constant offsets fold into loads
    # and stores: 2 KB less on the wire.
    target/node-build/node_modules/.bin/wasm-opt -Oz --converge --enable-bulk-memory --enable-nontrapping-float-to-int \
      --low-memory-unused \
      "www/pkg/${name}_bg.wasm" -o "www/pkg/${name}_bg.wasm"
  fi
}
# The page's module.
module nsqlab-web web
# The replication scenario (raft and its protobuf code): a second module, loaded by the page
# only when that scenario is opened (web/raft; www/index.html's loader imports pkg/raft.js).
module nsqlab-web-raft raft --features play
# The Chinese words, loaded by the page when first asked for (they are not in the wasm).
cargo run --locked -q -p nsqlab-web --example zh-catalogue >www/pkg/zh.json
# Precompressed twins, which the server sends to browsers that accept them (brotli too when
# the brotli tool is installed; gzip alone keeps the first load under 400 KiB).
for f in www/pkg/web_bg.wasm www/pkg/web.js www/pkg/zh.json www/pkg/raft_bg.wasm www/pkg/raft.js; do
  gzip -9 -n -k -f "$f"
  if command -v brotli >/dev/null 2>&1; then brotli -q 11 -k -f "$f"; else rm -f "$f.br"; fi
done
# The sources it was built from (the test command checks the committed build against them).
bash scripts/web-stamp.sh >www/pkg/SOURCES
printf 'visualiser: %s bytes wasm, %s bytes gzipped; replication module: %s bytes, %s gzipped\n' \
  "$(stat -c %s www/pkg/web_bg.wasm)" "$(stat -c %s www/pkg/web_bg.wasm.gz)" \
  "$(stat -c %s www/pkg/raft_bg.wasm)" "$(stat -c %s www/pkg/raft_bg.wasm.gz)"
