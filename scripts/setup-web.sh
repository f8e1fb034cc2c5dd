#!/usr/bin/env bash
# Install what rebuilding the visualiser's page (scripts/build-web.sh) needs, idempotently:
# the wasm32 target, wasm-bindgen's CLI, binaryen's wasm-opt and brotli. Running the server
# does not need them: the page comes built (www/pkg, built into the binary).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup-build.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen's CLI must match the pinned crate version exactly.
WB_VERSION=0.2.129
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WB_VERSION\$"; then
  log "installing wasm-bindgen-cli $WB_VERSION (about 5 minutes, once)"
  cargo install wasm-bindgen-cli --version "$WB_VERSION" --locked
fi

# wasm-opt from npm's binaryen (Debian's is too old for rustc's output).
BUILD_TOOLS=target/node-build
if [ ! -x "$BUILD_TOOLS/node_modules/.bin/wasm-opt" ]; then
  log "installing binaryen (wasm-opt) into $BUILD_TOOLS"
  mkdir -p "$BUILD_TOOLS"
  (cd "$BUILD_TOOLS" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund binaryen@132)
fi

# brotli precompresses the page's WebAssembly (a quarter smaller on the wire than gzip).
if ! command -v brotli >/dev/null 2>&1; then
  log "installing Debian's brotli"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends brotli
fi
