#!/usr/bin/env bash
# Issue 17's soak: well-behaved WebSocket clients (loadgen, 8 in flight, from 127.0.0.1) measured in
# alternating phases alone and beside a hostile client mix (curl from 127.0.0.2, another client to
# the server): a flood of long ignore_eos requests past the per-client queue quota, max_tokens
# 2147483647, ~900 KB prompts with n=16, empty prompts. ROUNDS (default 5) x 2 phases of PHASE_S
# (default 60) seconds: 10 minutes. Alternating A/B phases keeps drifts of the machine (bandwidth,
# other load) out of the ratio.
#   load-tests/hostile_soak.sh                   # 10 minutes, stories260K from tests/data
#   ROUNDS=1 PHASE_S=20 load-tests/hostile_soak.sh   # a quick look
# Prints per phase the well-behaved clients' table row (p99 TTFT/ITL/E2EL, errors), the B/A ratios of
# each round (loadgen --compare), what the hostile mix got back (HTTP status counts), and the soak
# checks of the last phase (nothing running or waiting, every KV block free). Results in
# load-tests/results/hostile-soak-*.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
loadgen="${LOADGEN:-$root/build/loadgen}"
model="${MODEL:-$root/tests/data/models/stories260K.bin}"
tokenizer="${TOKENIZER:-$root/tests/data/models/tok512.bin}"
rounds="${ROUNDS:-5}"
phase_s="${PHASE_S:-60}"
results="$root/load-tests/results"
mkdir -p "$results"
statuses="$results/hostile-soak-statuses.txt"
: > "$statuses"

# shellcheck disable=SC2086
start_server "$results/hostile-soak-server.log" --model "$model" --tokenizer "$tokenizer" ${SERVER_ARGS:-}
echo "hostile soak: $rounds rounds of ${phase_s} s alone + ${phase_s} s beside the hostile mix, port $port, load average $(cut -d' ' -f1-3 /proc/loadavg)"

hostile_post() {  # $1 = body file; appends the HTTP status to $statuses
  curl -s -o /dev/null -w '%{http_code}\n' --interface 127.0.0.2 --max-time 120 \
    -H 'Content-Type: application/json' --data-binary "@$1" "http://127.0.0.1:$port/v1/completions" >> "$statuses" || true
}
bodies="$(mktemp -d)"
echo '{"prompt":"Once","max_tokens":400,"ignore_eos":true}' > "$bodies/long.json"
echo '{"prompt":"hi","max_tokens":2147483647,"ignore_eos":true,"stream":true}' > "$bodies/huge_max.json"
echo '{"prompt":"","max_tokens":8}' > "$bodies/empty.json"
{ printf '{"n":16,"max_tokens":4,"prompt":"'; for _ in $(seq 1 25000); do printf 'the little dog ran '; done; printf '"}'; } \
  > "$bodies/huge_prompt.json"
hostile_mix() {  # until $1 exists
  while [ ! -e "$1" ]; do
    for _ in $(seq 1 40); do hostile_post "$bodies/long.json" & done  # past the per-client queue quota
    hostile_post "$bodies/huge_max.json" &
    hostile_post "$bodies/huge_prompt.json" &
    for _ in $(seq 1 5); do hostile_post "$bodies/empty.json" & done
    wait
  done
}

well_behaved() {  # $1 = phase name
  "$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --soak-minutes "$(awk "BEGIN { print $phase_s / 60 }")" \
    --concurrency 8 --prompt-tokens uniform:4:200 --max-tokens uniform:16:128 --tokenizer "$tokenizer" \
    --cancel-fraction 0 --disconnect-fraction 0 --soak-interval-s "$phase_s" --seed 1 --label "$1" \
    --out "$results/hostile-soak-$1.json" > "$results/hostile-soak-$1.txt" 2>&1
}

status=0
for r in $(seq 1 "$rounds"); do
  well_behaved "alone-$r" || status=$?
  stop_file="$bodies/stop"
  rm -f "$stop_file"
  hostile_mix "$stop_file" &
  mix=$!
  well_behaved "hostile-$r" || status=$?
  touch "$stop_file"
  wait $mix
  for phase in alone hostile; do
    echo "=== $phase-$r"
    grep -A1 -m1 'p99 TTFT' "$results/hostile-soak-$phase-$r.txt" || cat "$results/hostile-soak-$phase-$r.txt"
  done
  "$loadgen" --compare "$results/hostile-soak-alone-$r.json" "$results/hostile-soak-hostile-$r.json" || true
done
echo "=== the hostile mix's responses (HTTP status: count)"
sort "$statuses" | uniq -c
echo "=== the last phase's soak checks"
grep -E '^(PASS|FAIL)|soak (passed|failed)' "$results/hostile-soak-hostile-$rounds.txt" || true
rm -rf "$bodies"
echo "host load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
stop_server
exit "$status"
