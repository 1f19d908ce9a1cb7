#!/usr/bin/env bash
# Issue 4's prefix-caching goal: time to first token on a shared-prefix workload (every prompt starts
# with the same 1000-token system prompt, then 24 tokens of its own) with prefix caching on and off,
# same server flags otherwise. Prints both TTFT medians and their ratio (goal >= 5).
#   load-tests/prefix_cache_ttft.sh        # random-weight s110m, 4096-token context
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
s110m_long_context

for caching in on off; do
  start_server "$results/prefix-ttft-$caching-server.log" --model "$model" --tokenizer "$tokenizer" \
    --kv-blocks 2048 --max-num-batched-tokens 512 --prefix-caching "$caching"
  "$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency 1 --num-requests 12 --shared-prefix-tokens 1000 \
    --prompt-tokens 1024 --max-tokens 8 --ignore-eos --tokenizer "$tokenizer" --label "prefix caching $caching" \
    --out "$results/prefix-ttft-$caching.json" >/dev/null
  stop_server
done
median() { grep -o '"median_ttft_ms": *[0-9.]*' "$results/prefix-ttft-$1.json" | head -1 | sed 's/.*: *//'; }
on="$(median on)"
off="$(median off)"
echo "TTFT median with a 1000-token shared prefix: caching on ${on} ms, off ${off} ms," \
     "ratio $(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.1f", b / a }') (goal >= 5)"
