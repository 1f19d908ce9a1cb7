#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, kernels, model, actors, end-to-end,
# loadtest), then every suite again under ASan+UBSan, the actor and scheduler tests under TSan, and
# every libFuzzer target for a bounded time. Any failure, sanitizer report or fuzz crash fails the run.
# Tests read tests/data; those that need the Llama-licensed files of ../shared skip with a message where it is absent.
# PAGEDSERVE_QUICK=1 runs only the Release tree (the first stage).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
stage() { echo "=== $1 ($(date +%T))"; }

stage "Release: build and test"
scripts/build.sh
(cd build && ctest --output-on-failure --timeout 300 -j2)
[ "${PAGEDSERVE_QUICK:-0}" = 1 ] && exit 0

# Sanitizer reports must fail the test that triggered them, with a stack.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# Every suite under ASan+UBSan: the server and loadgen instrumented, the harnesses stretching their
# deadlines by PAGEDSERVE_TEST_TIME_SCALE and failing a test whose server or CLI child printed a
# sanitizer report (tests/support/sanitizer_env.hpp).
stage "ASan+UBSan: build and test every suite"
PAGEDSERVE_BUILD_DIR=build-asan scripts/build.sh -DPAGEDSERVE_SANITIZE=address -DPAGEDSERVE_BUILD_BENCH=OFF
(cd build-asan && PAGEDSERVE_TEST_TIME_SCALE=4 ctest --output-on-failure --timeout 600 -j2)

# TSan runs TBB on one thread (tests/support/tsan_tbb.cpp), so the 500-request engine soak, 5 s in
# Release, outgrows its own 120 s bound; it runs in the Release and ASan trees.
stage "TSan: build and test the actors, the scheduling step and the block manager"
PAGEDSERVE_BUILD_DIR=build-tsan PAGEDSERVE_BUILD_TARGETS=tsan_tests \
  scripts/build.sh -DPAGEDSERVE_SANITIZE=thread -DPAGEDSERVE_BUILD_BENCH=OFF
(cd build-tsan && ctest --output-on-failure --timeout 600 -j2 -L '^tsan$' -E 'kv_pool_is_whole_after_500_random_requests')

stage "libFuzzer: build and run every target"
cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build build-fuzz -j"$(nproc)"
fuzz/run-all.sh build-fuzz "${PAGEDSERVE_FUZZ_SECONDS:-30}"
stage "done"
