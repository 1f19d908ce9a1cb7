#!/usr/bin/env bash
# Installs pagedserve as a program: the Debian 12 packages building and running it need (only those
# missing; apt-get as root, else sudo), a Release build of the server alone, then `cmake --install`:
# <prefix>/bin/pagedserve, <prefix>/share/pagedserve/{web,models}. The prefix is $PAGEDSERVE_PREFIX,
# else /usr/local. The build tree is $PAGEDSERVE_BUILD_DIR, else build-server; an existing tree is
# built as it is configured (so the test tree of scripts/run-tests.sh can be installed from too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --server
dir=${PAGEDSERVE_BUILD_DIR:-build-server}
prefix=${PAGEDSERVE_PREFIX:-/usr/local}
[ -f "$dir/CMakeCache.txt" ] ||
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGEDSERVE_BUILD_TESTS=OFF -DPAGEDSERVE_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target pagedserve
cmake --install "$dir" --prefix "$prefix" >/dev/null
echo "installed $prefix/bin/pagedserve; run: pagedserve serve"
