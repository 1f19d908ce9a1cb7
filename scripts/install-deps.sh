#!/usr/bin/env bash
# Installs the Debian 12 packages pagedserve builds and tests with, only those that are missing;
# --server: only those building and running the server need.
set -euo pipefail
# What building and running the server needs (scripts/install.sh, scripts/run-server.sh: --server) ...
server_packages=(build-essential cmake ninja-build pkg-config ccache
                 libboost1.81-dev libsimdjson-dev libspdlog-dev libfmt-dev libtbb-dev
                 libpcre2-dev libicu-dev libssl-dev libcli11-dev
                 openssl ca-certificates)  # hub downloads over HTTPS
# ... and what the tests add (scripts/run-tests.sh: no argument).
test_packages=(git libgtest-dev libgmock-dev libbenchmark-dev gnuplot-nox
               chromium  # the chat page's browser test (tests/browser) drives Debian's chromium
               nginx-light curl  # replicas behind nginx: tests/e2e/replicas_nginx_test.cpp, scripts/replicas.sh
               python3  # the README's Python examples (tests/readme)
               python3-jsonschema  # validates constrained-decoding outputs: tests/unit/grammar_property_test.cpp
               clang-19 libclang-rt-19-dev)  # libFuzzer (fuzz/); clang-14 cannot compile libstdc++ 12's std::expected
packages=("${server_packages[@]}")
[ "${1:-}" = --server ] || packages+=("${test_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm run the OpenAI client tests (tests/e2e/openai); any Node >= 20 already on PATH will do.
if [ "${1:-}" != --server ]; then
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
