#!/usr/bin/env bash
# Install what nsqlab's tests need besides the build (setup-web.sh), idempotently.
# Sourced by test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup-web.sh

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

# gnsq 1.0.2's own test suite (its sdist ships tests/, whose harness starts `nsqd` and
# `nsqlookupd` from PATH): tests/tests/interop_gnsq.rs runs it against nsqlab with pytest.
GNSQ_SUITE=target/gnsq-suite
if [ ! -f "$GNSQ_SUITE/ready" ]; then
  log "installing gnsq 1.0.2's own test suite into $GNSQ_SUITE"
  rm -rf "$GNSQ_SUITE"
  mkdir -p "$GNSQ_SUITE"
  "$VENV/bin/pip" install -q pytest pytest-timeout
  "$VENV/bin/pip" download -q --no-binary :all: --no-deps 'gnsq==1.0.2' -d "$GNSQ_SUITE"
  tar xzf "$GNSQ_SUITE/gnsq-1.0.2.tar.gz" -C "$GNSQ_SUITE"
  touch "$GNSQ_SUITE/ready"
fi

# nsqjs from npm (unchanged) for the interop tests.
NODE_DIR=target/node-interop
if [ ! -d "$NODE_DIR/node_modules/nsqjs" ]; then
  log "installing nsqjs into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund nsqjs@0.13.0)
fi

# playwright-core for the page tests, which drive Debian's Chromium; axe-core, the
# accessibility checks they run in the page.
TOOLS_DIR=target/node-tools
if [ ! -d "$TOOLS_DIR/node_modules/playwright-core" ] || [ ! -f "$TOOLS_DIR/node_modules/axe-core/axe.min.js" ]; then
  log "installing playwright-core and axe-core into $TOOLS_DIR"
  mkdir -p "$TOOLS_DIR"
  (cd "$TOOLS_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund playwright-core axe-core@4)
fi

# Debian's chromium and its driver for the page tests, and a font with Chinese glyphs (5 MB)
# so that the Chinese pages' screenshots show their text, not boxes.
debs=()
command -v chromium >/dev/null 2>&1 || debs+=(chromium)
command -v chromedriver >/dev/null 2>&1 || debs+=(chromium-driver)
dpkg -s fonts-wqy-microhei >/dev/null 2>&1 || debs+=(fonts-wqy-microhei)
if [ ${#debs[@]} -gt 0 ]; then
  log "installing Debian's ${debs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}"
fi

# The black-box tests fail, rather than skip, when one of these is missing.
export NSQLAB_ALL_TOOLS=1
