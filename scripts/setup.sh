#!/usr/bin/env bash
# Install what nsqlab's build and tests need, idempotently. Sourced by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

export PATH="$HOME/.cargo/bin:$PATH"

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

if ! command -v wasm-pack >/dev/null 2>&1; then
  log "installing wasm-pack (about 5 minutes, once)"
  cargo install wasm-pack --locked
fi

# Real NSQ client libraries for the interop tests, from PyPI (unchanged).
VENV=target/venv-interop
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import nsq' 2>/dev/null; then
  log "installing pynsq into $VENV"
  mkdir -p target
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'pynsq==0.9.1' 'tornado>=6,<7' 'python-snappy'
fi
if ! "$VENV/bin/python" -c 'import snappy' 2>/dev/null; then
  "$VENV/bin/pip" install -q 'python-snappy'
fi
if ! "$VENV/bin/python" -c 'import gnsq' 2>/dev/null; then
  log "installing gnsq into $VENV"
  "$VENV/bin/pip" install -q 'gnsq==1.0.2'
fi

# nsqjs from npm (unchanged) for the interop tests.
NODE_DIR=target/node-interop
if [ ! -d "$NODE_DIR/node_modules/nsqjs" ]; then
  log "installing nsqjs into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund nsqjs@0.13.0)
fi

# wasm-opt from npm's binaryen (Debian's is too old for rustc's output); playwright-core for
# the page tests, which drive Debian's Chromium; axe-core, the accessibility checks they run
# in the page.
TOOLS_DIR=target/node-tools
if [ ! -x "$TOOLS_DIR/node_modules/.bin/wasm-opt" ] || [ ! -d "$TOOLS_DIR/node_modules/playwright-core" ] \
   || [ ! -f "$TOOLS_DIR/node_modules/axe-core/axe.min.js" ]; then
  log "installing binaryen, playwright-core and axe-core into $TOOLS_DIR"
  mkdir -p "$TOOLS_DIR"
  (cd "$TOOLS_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund binaryen@132 playwright-core axe-core@4)
fi
# Debian's packages: chromium and its driver for the page tests, brotli to precompress the
# page's WebAssembly (a quarter smaller on the wire than gzip).
debs=()
command -v chromium >/dev/null 2>&1 || debs+=(chromium)
command -v chromedriver >/dev/null 2>&1 || debs+=(chromium-driver)
command -v brotli >/dev/null 2>&1 || debs+=(brotli)
if [ ${#debs[@]} -gt 0 ]; then
  log "installing Debian's ${debs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}"
fi
