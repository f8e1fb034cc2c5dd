#!/usr/bin/env bash
# Install what building the nsqlab binary needs, idempotently: a Rust toolchain (the
# visualiser's page comes built, in www/pkg: setup-web.sh adds what rebuilding it needs).
# Sourced by run.sh and setup-web.sh; setup-test.sh adds what the tests need.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

export PATH="$HOME/.cargo/bin:$PATH"

if ! command -v cargo >/dev/null 2>&1; then
  log "no cargo: install Rust (https://rustup.rs) first"
  exit 1
fi
