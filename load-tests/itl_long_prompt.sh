#!/usr/bin/env bash
# Issue 4's latency goal: p99 inter-token latency of 16 running streams while a 2000-token prompt
# arrives, against the same 16 streams with no such prompt, in one run on one server.
#   load-tests/itl_long_prompt.sh                 # random-weight s110m with a 4096-token context
#   SERVER_ARGS='--max-decode-slowdown 0' load-tests/itl_long_prompt.sh   # without the slowdown bound
# Prints both p99s and their ratio; results in load-tests/results/itl-long-prompt-*.json.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
s110m_long_context

# shellcheck disable=SC2086
start_server "$results/itl-long-prompt-server.log" --model "$model" --tokenizer "$tokenizer" --kv-blocks 2048 \
  --max-num-seqs 64 --max-num-batched-tokens 512 ${SERVER_ARGS:-}
target="ws://127.0.0.1:$port/v1/ws"

streams() {  # 16 streams of 384 tokens each
  "$loadgen" --target "$target" --concurrency 16 --num-requests 16 --prompt-tokens 101 --max-tokens 384 \
    --ignore-eos --tokenizer "$tokenizer" --seed "$1" --label "$2" --out "$results/itl-long-prompt-$2.json" >/dev/null
}
p99() { grep -o '"p99_itl_ms": *[0-9.]*' "$results/itl-long-prompt-$1.json" | head -1 | sed 's/.*: *//'; }

streams 1 alone
streams 2 with-long-prompt &
streams_pid=$!
sleep 3  # the 16 streams are decoding
"$loadgen" --target "$target" --concurrency 1 --num-requests 1 --prompt-tokens 2000 --max-tokens 8 --ignore-eos \
  --tokenizer "$tokenizer" --seed 3 --label long-prompt --out "$results/itl-long-prompt-long.json" >/dev/null
wait $streams_pid

alone="$(p99 alone)"
loaded="$(p99 with-long-prompt)"
ttft_long="$(grep -o '"median_ttft_ms": *[0-9.]*' "$results/itl-long-prompt-long.json" | head -1 | sed 's/.*: *//')"
echo "p99 ITL of 16 streams: alone ${alone} ms, while a 2000-token prompt arrives ${loaded} ms," \
     "ratio $(awk -v a="$alone" -v b="$loaded" 'BEGIN { printf "%.2f", b / a }') (goal <= 2); long prompt's TTFT ${ttft_long} ms"
