#!/usr/bin/env bash
# Configures and builds pagedserve (Release) into build/, or into $PAGEDSERVE_BUILD_DIR.
# Extra arguments go to cmake (e.g. -DPAGEDSERVE_SANITIZE=address); cmake --build targets can be
# named in $PAGEDSERVE_BUILD_TARGETS (default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${PAGEDSERVE_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${PAGEDSERVE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
