#!/usr/bin/env bash
# The perf.md sweep (../shared/anchors/perf.md sections 4-5): 101-token prompts unique per request,
# 128 output tokens with ignore_eos, 2 x concurrency requests per level (min 4), over WebSocket.
#   load-tests/perf_sweep.sh s110m      # random-weight s110m (written once to $MODEL_DIR), levels 1,4,16,64
#   load-tests/perf_sweep.sh tinyllama  # random-weight TinyLlama shape (4.4 GB fp32, written once), levels 1,16
#   load-tests/perf_sweep.sh stories260K  # tests/data/models/stories260K.bin, levels 1,4,16
# Results go to load-tests/results/<model>-ws.{json,png}. Override binaries with PAGEDSERVE=, LOADGEN=,
# MAKE_MODEL=; levels with LEVELS=; server flags with SERVER_ARGS=.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
loadgen="${LOADGEN:-$root/build/loadgen}"
make_model="${MAKE_MODEL:-$root/build/make-random-model}"
model_dir="${MODEL_DIR:-/tmp}"
results="$root/load-tests/results"
mkdir -p "$results"

case "${1:-s110m}" in
  s110m)
    model="$model_dir/s110m.bin"
    [ -f "$model" ] || "$make_model" "$model" 768 2048 12 12 12 32000 1024 0 1
    tokenizer="$shared/models/tokenizer.bin"
    levels="${LEVELS:-1,4,16,64}"
    server_args="${SERVER_ARGS:---kv-blocks 2048 --max-num-seqs 64 --max-num-batched-tokens 512}"
    name=s110m ;;
  tinyllama)  # perf.md: 2048/5632/22 layers/32 heads/4 kv heads, vocab 32000, untied classifier
    model="$model_dir/tinyllama.bin"
    [ -f "$model" ] || "$make_model" "$model" 2048 5632 22 32 4 32000 2048 1 1
    tokenizer="$shared/models/tokenizer.bin"
    levels="${LEVELS:-1,16}"
    server_args="${SERVER_ARGS:---kv-blocks 1024 --max-num-seqs 64 --max-num-batched-tokens 512}"
    name=tinyllama ;;
  stories260K)
    model="$root/tests/data/models/stories260K.bin"
    tokenizer="$root/tests/data/models/tok512.bin"
    levels="${LEVELS:-1,4,16}"
    server_args="${SERVER_ARGS:-}"
    name=stories260K ;;
  *) echo "usage: $0 s110m|tinyllama|stories260K" >&2; exit 2 ;;
esac

# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
# shellcheck disable=SC2086
start_server "$results/$name-server.log" --model "$model" --tokenizer "$tokenizer" $server_args

"$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency "$levels" --prompt-tokens 101 --max-tokens 128 \
  --ignore-eos --tokenizer "$tokenizer" --label "pagedserve $name ws" \
  --out "$results/$name-ws.json" --plot "$results/$name-ws.png"
