#!/usr/bin/env bash
# Every test nsqlab has: formatting, lints, native tests, the core in WebAssembly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-test.sh

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
export CARGO_TERM_COLOR=never

step "format"
cargo fmt --all --check

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "the core builds for wasm32-unknown-unknown and imports nothing from the host"
cargo build --locked -p nsqlab-core --target wasm32-unknown-unknown --release
cargo build --locked -p nsqlab-core --target wasm32-unknown-unknown --release --example wasm_probe
node scripts/wasm-imports.cjs target/wasm32-unknown-unknown/release/examples/wasm_probe.wasm

step "clippy for the wasm-only visualiser code"
cargo clippy --locked -p nsqlab-web --target wasm32-unknown-unknown --release -- -D warnings

step "the visualiser page (www/pkg)"
bash scripts/build-web.sh

step "the nsqlab binary the black-box tests start"
cargo build --locked -p nsqlab --bin nsqlab
export NSQLAB_BIN="$PWD/target/debug/nsqlab"

step "native tests (SIM_SEEDS=${SIM_SEEDS:-10000} simulation seeds)"
cargo test --workspace --locked 2>&1 | tee target/test-native.log
summary() { grep -E '^test result:' target/test-native.log | awk '{p+=$4; f+=$6} END {print p" passed, "f" failed"}'; }

step "core tests in WebAssembly (wasm-pack test --node core)"
wasm-pack test --node core 2>&1 | tee target/test-wasm.log
grep -E '^test result: ok' target/test-wasm.log >/dev/null

step "core tests in WebAssembly in headless Chromium (Debian's chromium + chromedriver)"
# core/webdriver.json points chromedriver at /usr/bin/chromium, headless.
WASM_BINDGEN_USE_BROWSER=1 WASM_BINDGEN_TEST_TIMEOUT=120 \
  wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver core 2>&1 | tee target/test-wasm-browser.log
if grep -E '^test result: FAILED|only configured to run in node' target/test-wasm-browser.log >/dev/null \
  || ! grep -E '^test result: ok' target/test-wasm-browser.log >/dev/null; then
  echo "core tests in Chromium failed" >&2; exit 1
fi

step "visualiser components in headless Chromium (wasm-bindgen-test)"
WASM_BINDGEN_TEST_TIMEOUT=120 \
  wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver web 2>&1 | tee target/test-web-components.log
if grep -E '^test result: FAILED' target/test-web-components.log >/dev/null \
  || ! grep -E '^test result: ok\. [1-9][0-9]* passed' target/test-web-components.log >/dev/null; then
  echo "visualiser component tests failed" >&2; exit 1
fi

step "summary"
echo "native: $(summary)"
