#!/usr/bin/env bash
# Qwen3-30B-A3B at full size: a random-weight qwen3moe GGUF of its shape (48 layers, 128 experts, 8
# active, hidden 2048, expert width 768, 32 heads / 4 KV heads of 128, vocab 151936) written as Q4_K_M
# (18.6 GB, once, to $MODEL_DIR, never into the tree), served packed from the mapping, and reports:
#   RSS after load (must stay well under the machine's 24 GiB: no swap), batch-1 and 16-stream decode
#   tok/s (loadgen over WebSocket, 101-token prompts, 64 output tokens, ignore_eos), and the limit
#   bandwidth / active bytes per token (decode-limit, measured in the same run).
#   load-tests/moe_full_size.sh            # MODEL_DIR=/work/models-scratch, LEVELS=1,16
# PROMPT_TOKENS, MAX_TOKENS and NUM_REQUESTS (per level) override the workload. The synthetic vocabulary
# is bytes plus filler words, so the server splits a prompt into about 4x loadgen's token count (prefill
# dominates a run: TTFT, not decode); decode tok/s is TPOT/ITL.
# Results: load-tests/results/qwen3moe-30b-a3b-ws.json and a summary line on stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
loadgen="${LOADGEN:-$root/build/loadgen}"
make_model="${MAKE_MODEL:-$root/build/make-random-model}"
decode_limit="${DECODE_LIMIT:-$root/build/decode-limit}"
model_dir="${MODEL_DIR:-/work/models-scratch}"
levels="${LEVELS:-1,16}"
results="$root/load-tests/results"
mkdir -p "$results" "$model_dir"
name=qwen3moe-30b-a3b
model="$model_dir/qwen3-30b-a3b-random-Q4_K_M.gguf"
# dim hidden layers heads kv_heads head_dim vocab context experts active expert_width untied seed
[ -f "$model" ] || "$make_model" --gguf "$model" qwen3moe Q4_K_M 2048 6144 48 32 4 128 151936 40960 128 8 768 1 1

# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
# shellcheck disable=SC2086
start_server "$results/$name-server.log" --model "$model" --kv-blocks 1024 --max-num-seqs 16 \
  --max-num-batched-tokens 512 ${SERVER_ARGS:-}
rss_kib="$(awk '/VmRSS/ {print $2}' "/proc/$server/status")"
echo "RSS after load: $((rss_kib / 1024)) MiB (model file $(( $(stat -c %s "$model") / 1048576 )) MiB)"
grep -o 'model weights: [^)]*)' "$results/$name-server.log" || true

"$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency "$levels" --prompt-tokens "${PROMPT_TOKENS:-101}" \
  --max-tokens "${MAX_TOKENS:-64}" ${NUM_REQUESTS:+--num-requests "$NUM_REQUESTS"} --ignore-eos --tokenizer "$shared/models/tokenizer.bin" --label "pagedserve $name ws" \
  --out "$results/$name-ws.json"
rss_kib="$(awk '/VmRSS/ {print $2}' "/proc/$server/status")"
echo "RSS after the run: $((rss_kib / 1024)) MiB"
stop_server
"$decode_limit" "$model"
