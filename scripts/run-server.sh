#!/usr/bin/env bash
# Installs what building and running the server needs (no test tools), builds the server alone, and
# starts it on config/default.json from the build tree (the shipped model and page found beside it).
# Extra arguments go to `pagedserve serve` (e.g. a MODEL, --port 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --server
dir=${PAGEDSERVE_BUILD_DIR:-build-server}
[ -f "$dir/CMakeCache.txt" ] ||
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGEDSERVE_BUILD_TESTS=OFF -DPAGEDSERVE_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target pagedserve
exec "$dir/pagedserve" serve --config config/default.json "$@"
