#!/usr/bin/env bash
# The perf.md sweep (../shared/anchors/perf.md sections 4-5): 101-token prompts unique per request,
# 128 output tokens with ignore_eos, 2 x concurrency requests per level (min 4), over WebSocket.
#   load-tests/perf_sweep.sh s110m      # random-weight s110m (written once to $MODEL_DIR), levels 1,4,16,64
#   load-tests/perf_sweep.sh tinyllama  # random-weight TinyLlama shape (4.4 GB fp32, written once), levels 1,16
#   load-tests/perf_sweep.sh stories260K  # tests/data/models/stories260K.bin, levels 1,4,16
# Results go to load-tests/results/<model>-ws.{json,png}. Override binaries with PAGEDSERVE=, LOADGEN=,
# MAKE_MODEL=, DECODE_LIMIT=; levels with LEVELS=; server flags with SERVER_ARGS=; the weights and KV
# cache served with QUANT= (none, bf16, int8, int4: --quantization) and KV_DTYPE= (f32, f16, q8).
# Then, per level, the roofline (docs/roofline.md): the decode tok/s (streams / mean TPOT) against
# what the step's reads allow, streams x bandwidth / (weights + streams x attended positions x K/V
# bytes per position), the bandwidth measured by decode-limit in the same run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
loadgen="${LOADGEN:-$root/build/loadgen}"
make_model="${MAKE_MODEL:-$root/build/make-random-model}"
decode_limit="${DECODE_LIMIT:-$root/build/decode-limit}"
quant="${QUANT:-none}"
kv_dtype="${KV_DTYPE:-f32}"
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
start_server "$results/$name-server.log" --model "$model" --tokenizer "$tokenizer" --quantization "$quant" \
  --kv-cache-dtype "$kv_dtype" $server_args

"$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency "$levels" --prompt-tokens 101 --max-tokens 128 \
  --ignore-eos --tokenizer "$tokenizer" --label "pagedserve $name ws" \
  --out "$results/$name-ws.json" --plot "$results/$name-ws.png"

# The roofline column: each level's decode rate against the memory traffic of its steps, with the
# bandwidth measured now (it drifts on a VM). A request attends its 101 prompt positions plus, on
# average, half its 128 outputs.
read -r _ weight_bytes _ gbps _ _ _ kv_bytes < <("$decode_limit" "$model" --quantization "$quant" --kv-cache-dtype "$kv_dtype" |
  grep '^active_bytes_per_token')
python3 - "$results/$name-ws.json" "$weight_bytes" "$gbps" "$kv_bytes" <<'PY'
import json, sys
levels = json.load(open(sys.argv[1]))["levels"]
weights, gbps, kv = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
attended = 101 + 1 + 128 / 2
print(f"roofline at {gbps:.1f} GB/s: weights {weights / 1e6:.1f} MB a step, K/V {kv / 1e3:.1f} kB a position")
print(f"{'conc':>6} {'decode tok/s':>13} {'limit tok/s':>12} {'roofline':>9}")
for l in levels:
    n = l["concurrency"]
    decode = n * 1000.0 / l["mean_tpot_ms"] if l["mean_tpot_ms"] > 0 else 0.0
    limit = n * gbps * 1e9 / (weights + n * attended * kv)
    print(f"{n:>6} {decode:>13.1f} {limit:>12.1f} {decode / limit:>9.3f}")
PY
