#!/usr/bin/env bash
# Issue 8's soak: MINUTES (default 10) of mixed load on one server, WebSocket and OpenAI SSE clients
# at once, prompts of 4 to 250 tokens and max_tokens of 1 to 256 drawn per request (within
# stories260K's 512-token context; PROMPT_TOKENS, MAX_TOKENS override), 10% of requests
# dropped at a random moment (the socket closed without a word) and 5% cancelled. Then each
# loadgen checks the server is at rest: every request answered, nothing running or waiting, every
# KV block free, resident memory grown by at most RSS_BOUND_MB since its warm-up.
#   load-tests/soak.sh                       # 10 minutes, stories260K from tests/data
#   MINUTES=0.5 load-tests/soak.sh           # a quick look
#   MODEL=/tmp/s110m.bin TOKENIZER=../shared/models/tokenizer.bin load-tests/soak.sh
# Prints each client's table: per INTERVAL_S (default 60) seconds the requests ended, errors by kind,
# p99 TTFT/ITL/E2EL and /health (RSS, KV blocks free, running, waiting), then RSS at the start, after
# warm-up and at the end, and the checks (format: load-tests/README.md, "Soak"). Results in
# load-tests/results/soak-{ws,sse}.json; exit 0 when both clients' checks passed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
loadgen="${LOADGEN:-$root/build/loadgen}"
model="${MODEL:-$root/tests/data/models/stories260K.bin}"
tokenizer="${TOKENIZER:-$root/tests/data/models/tok512.bin}"
minutes="${MINUTES:-10}"
results="$root/load-tests/results"
mkdir -p "$results"

# shellcheck disable=SC2086
start_server "$results/soak-server.log" --model "$model" --tokenizer "$tokenizer" ${SERVER_ARGS:-}
echo "soak: $minutes min on port $port, server pid $server, host load average $(cut -d' ' -f1-3 /proc/loadavg)"

soak() {  # $1 = ws|sse, $2 = target, $3 = concurrency
  "$loadgen" --target "$2" --soak-minutes "$minutes" --concurrency "$3" --prompt-tokens "${PROMPT_TOKENS:-uniform:4:250}" \
    --max-tokens "${MAX_TOKENS:-uniform:1:256}" --tokenizer "$tokenizer" --disconnect-fraction 0.1 --cancel-fraction 0.05 \
    --soak-interval-s "${INTERVAL_S:-60}" --rss-bound-mb "${RSS_BOUND_MB:-64}" --seed "${SEED:-1}" \
    --label "soak $1" --out "$results/soak-$1.json" > "$results/soak-$1.txt" 2>&1
}
status=0
soak ws "ws://127.0.0.1:$port/v1/ws" 12 &
ws=$!
soak sse "http://127.0.0.1:$port/v1/completions" 4 &
sse=$!
wait $ws || status=$?
wait $sse || status=$?
for client in ws sse; do
  echo "=== $client ($results/soak-$client.json)"
  cat "$results/soak-$client.txt"
done
echo "host load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
stop_server
exit "$status"
