#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, kernels, model, actors, end-to-end).
# Tests that need ../shared (models, goldens) skip with a message where it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure --timeout 300 -j2
