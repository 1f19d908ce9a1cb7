#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time, two at a time (one per core),
# each on its seed corpus in fuzz/corpus/<target>/; exits non-zero if any target crashed, leaked,
# timed out or ran out of memory. New inputs go to BUILD/corpus/<target>/ (the repo's seeds stay
# hand-picked) and a crashing input to BUILD/crashes/<target>-crash-*, to be fixed and then kept as a
# regression in fuzz/regressions/<target>/.
#   fuzz/run-all.sh [BUILD=build-fuzz] [SECONDS=30]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-30}
jobs=${FUZZ_JOBS:-2}

run_one() {  # $1 = target binary; prints one summary line, returns libFuzzer's status
  local bin=$1 name status
  name=$(basename "$bin")
  mkdir -p "$build/corpus/$name" "$build/crashes" "$build/logs"
  local log=$build/logs/$name.log
  status=0
  # -timeout: one input running 10 s is a hang; -rss_limit_mb bounds a memory blow-up.
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$name-" "$build/corpus/$name" "fuzz/corpus/$name" >"$log" 2>&1 || status=$?
  local execs rate
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if ((status == 0)); then
    echo "fuzz: $name ok: ${execs:-?} execs, ${rate:-?} exec/s in ${seconds} s"
  else
    echo "fuzz: $name FAILED (status $status), log $log:"
    grep -E -A25 "^==[0-9]+==ERROR|runtime error|broken promise|ALARM|out-of-memory|deadly signal" "$log" | head -60
  fi
  return "$status"
}

targets=("$build"/*_fuzz)
[ -x "${targets[0]}" ] || { echo "no *_fuzz binaries in $build: build fuzz/ first"; exit 1; }
passed=0 failed=0 n_running=0
reap() { if wait -n; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; n_running=$((n_running - 1)); }
for bin in "${targets[@]}"; do
  ((n_running < jobs)) || reap
  run_one "$bin" &
  n_running=$((n_running + 1))
done
while ((n_running > 0)); do reap; done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
