#!/usr/bin/env bash
# The sources the visualiser's build (www/pkg) is made from, as one hash: core/, web/ and
# web/raft/ (their src/, examples/ and Cargo.toml), the workspace's Cargo.toml and Cargo.lock, and the build
# script. build-web.sh writes it to www/pkg/SOURCES beside the build it made.
#   bash scripts/web-stamp.sh           # print the hash of the sources as they are
#   bash scripts/web-stamp.sh --check   # fail, saying what to run, if www/pkg is stale
set -euo pipefail
cd "$(dirname "$0")/.."
stamp() {
  git ls-files -- core/src core/Cargo.toml web/src web/examples web/Cargo.toml web/raft/src web/raft/Cargo.toml Cargo.toml Cargo.lock \
      scripts/build-web.sh |
    LC_ALL=C sort |
    while IFS= read -r f; do
      # (A file deleted but not yet committed counts as gone.)
      if [ -f "$f" ]; then printf '%s  %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$f"; fi
    done |
    sha256sum | cut -d' ' -f1
}
case "${1:-}" in
  --check)
    want=$(stamp)
    have=$(cat www/pkg/SOURCES 2>/dev/null || echo none)
    if [ "$want" != "$have" ]; then
      echo "web-stamp: www/pkg was built from other sources than core/ and web/ as they are" >&2
      echo "web-stamp: (built from ${have}, sources now ${want})." >&2
      echo "web-stamp: run 'bash scripts/build-web.sh' and commit www/pkg." >&2
      exit 1
    fi
    echo "web-stamp: www/pkg is up to date with its sources" >&2
    ;;
  "") stamp ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
