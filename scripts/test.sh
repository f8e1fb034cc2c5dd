#!/usr/bin/env bash
# Every test nsqlab has: formatting, lints, native tests, the core in WebAssembly.
# Every step runs even when one before it failed (so one failure hides nothing); the
# summary names the steps that failed, and the script then exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-test.sh

# Each step's heading says how much target/ holds and how much the disk has left.
disk() { echo "disk: $(du -sh target 2>/dev/null | cut -f1) in target/, $(df -h . | awk 'NR==2 {print $4}') free" >&2; }
step() {
  printf '\n\033[1m== %s\033[0m\n' "$*" >&2
  disk
}
export CARGO_TERM_COLOR=never
# A fresh checkout gains nothing from incremental compilation, and its files would be the
# largest part of target/ (gigabytes): the whole run must fit a CI machine's disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# On a disk short of space (less than PRUNE_BELOW_GB free, 10 by default), a step's build is
# removed once no later step needs it: the run then needs about as much as its largest step
# (some 2 GB) instead of all of them together (some 4 GB). The next run builds it again.
prune() {
  local free
  free=$(df -BG --output=avail . | tail -1 | tr -dc 0-9)
  if [ "${free:-0}" -lt "${PRUNE_BELOW_GB:-10}" ]; then
    echo "disk: ${free} GB free: removing $*" >&2
    rm -rf "$@"
  fi
}
failed=()
# check NAME CMD...: run a step's command; a failure is remembered, not fatal.
check() {
  local name=$1
  shift
  if ! "$@"; then
    echo "FAILED: $name" >&2
    failed+=("$name")
  fi
}

# Inside a step, `set -e` does not apply (a function run as a condition): each command is
# chained, and a step's status is its last command's.
step "format"
check format cargo fmt --all --check

step "clippy"
check clippy cargo clippy --workspace --all-targets --locked -- -D warnings
# Its checks are no use to the builds below.
prune target/debug

step "the core builds for wasm32-unknown-unknown and imports nothing from the host"
core_wasm() {
  cargo build --locked -p nsqlab-core --target wasm32-unknown-unknown --release &&
    cargo build --locked -p nsqlab-core --target wasm32-unknown-unknown --release --example wasm_probe &&
    node scripts/wasm-imports.cjs target/wasm32-unknown-unknown/release/examples/wasm_probe.wasm
}
check "core for wasm32" core_wasm

step "clippy for the wasm-only visualiser code"
check "clippy (wasm32)" cargo clippy --locked -p nsqlab-web --target wasm32-unknown-unknown --release -- -D warnings
check "clippy (wasm32, the replication module)" cargo clippy --locked -p nsqlab-web-raft --features play --target wasm32-unknown-unknown --release -- -D warnings
prune target/wasm32-unknown-unknown/release

step "the committed visualiser build (www/pkg) is that of core/ and web/ as they are"
check "visualiser build up to date" bash scripts/web-stamp.sh --check

step "the visualiser page (www/pkg), built again"
check "visualiser page build" bash scripts/build-web.sh
prune target/wasm32-unknown-unknown/wasm-release

step "the nsqlab binary the black-box tests start: installed as users install it (cargo install)"
# A debug build (its checks on), installed out of the checkout: the page it serves is the copy
# built into it. (It reuses target/'s build: CARGO_TARGET_DIR.)
check "nsqlab binary" env CARGO_TARGET_DIR="$PWD/target" \
  cargo install --locked --debug --force --path server --root target/install --quiet
export NSQLAB_BIN="$PWD/target/install/bin/nsqlab"

step "native tests (SIM_SEEDS=${SIM_SEEDS:-10000} simulation seeds)"
# --no-fail-fast: every test binary runs, whatever failed before it.
native() { cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/test-native.log; }
check "native tests" native
# The black-box tests' binary stays (target/install).
prune target/debug
summary() { grep -E '^test result:' target/test-native.log | awk '{p+=$4; f+=$6} END {print p" passed, "f" failed"}'; }

step "replicated groups under random faults: ${REPLICA_SEEDS:=3000} seeds (release build)"
# The native tests ran 200; these are the thousands (crashes, cut links, lost messages and
# disks, membership changes), optimised so they take a minute.
replica_seeds() {
  NSQLAB_REPLICA_SEEDS=$REPLICA_SEEDS cargo test --release --locked -p nsqlab-core --features replication \
    --lib replica::tests::random_faults_keep_every_promise 2>&1 | tee target/test-replica.log &&
    grep -E '^test result: ok\. 1 passed' target/test-replica.log >/dev/null
}
check "replication seeds" replica_seeds
prune target/release

step "core tests in WebAssembly (wasm-pack test --node core)"
wasm_node() {
  wasm-pack test --node core 2>&1 | tee target/test-wasm.log &&
    grep -E '^test result: ok' target/test-wasm.log >/dev/null
}
check "core in wasm (node)" wasm_node

step "core tests in WebAssembly in headless Chromium (Debian's chromium + chromedriver)"
# core/webdriver.json points chromedriver at /usr/bin/chromium, headless.
# chromedriver gives each session a new Chromium profile (some 70 MB) in TMPDIR and leaves it
# behind when the test runner ends the session: they go to a directory of the run's own,
# removed after each step.
CHROME_TMP=$PWD/target/chromedriver-tmp
wasm_browser() {
  rm -rf "$CHROME_TMP" && mkdir -p "$CHROME_TMP"
  TMPDIR=$CHROME_TMP WASM_BINDGEN_USE_BROWSER=1 WASM_BINDGEN_TEST_TIMEOUT=120 \
    wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver core 2>&1 | tee target/test-wasm-browser.log
  if grep -E '^test result: FAILED|only configured to run in node' target/test-wasm-browser.log >/dev/null \
    || ! grep -E '^test result: ok' target/test-wasm-browser.log >/dev/null; then
    echo "core tests in Chromium failed" >&2
    return 1
  fi
}
check "core in wasm (Chromium)" wasm_browser
rm -rf "$CHROME_TMP"

step "visualiser components in headless Chromium (wasm-bindgen-test)"
web_components() {
  rm -rf "$CHROME_TMP" && mkdir -p "$CHROME_TMP"
  TMPDIR=$CHROME_TMP WASM_BINDGEN_TEST_TIMEOUT=120 \
    wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver web 2>&1 | tee target/test-web-components.log
  if grep -E '^test result: FAILED' target/test-web-components.log >/dev/null \
    || ! grep -E '^test result: ok\. [1-9][0-9]* passed' target/test-web-components.log >/dev/null; then
    echo "visualiser component tests failed" >&2
    return 1
  fi
}
check "visualiser components" web_components
rm -rf "$CHROME_TMP"

step "summary"
status=0
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed steps: %s\n' "$(IFS=,; echo "${failed[*]}")" >&2
  status=1
else
  echo "every step passed"
fi
if [ -f target/test-native.log ]; then
  echo "native: $(summary)"
fi
exit $status
