#!/usr/bin/env bash
# Installs what is missing, builds, and starts the server on config/default.json.
# Extra arguments go to `pagedserve serve` (e.g. --model M.bin --tokenizer T.bin --port 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/pagedserve serve --config config/default.json "$@"
