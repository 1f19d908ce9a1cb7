#!/usr/bin/env bash
# llama.cpp beside pagedserve on the same GGUF files, in the same run, alternating (issue 18 item 6).
# For each file, ROUNDS times: llama.cpp batch-1 decode, pagedserve batch-1 decode (bench_decode on
# the file), llama.cpp with STREAMS sequences in one context, pagedserve's engine at STREAMS
# (bench_decode) and its server at STREAMS streams (loadgen over WebSocket); then the resident
# memory of both and the bandwidth limit (bytes one token reads / read bandwidth measured by
# bench_decode in the same run). llama.cpp is node-llama-cpp's prebuilt CPU build (peer/).
#
#   load-tests/quant_vs_llama_cpp.sh                         # the default files below
#   load-tests/quant_vs_llama_cpp.sh s110m-Q8_0 tinyllama-Q4_0 /path/any.gguf
# A name SHAPE-TYPE (shapes s110m, tinyllama; TYPE any llama-quantize ftype, with llama.cpp's per-tensor
# mix, that build/make-random-model --gguf writes: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S Q3_K_S
# Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS, or pure:<type>, e.g. pure:q4_K) is written once to
# $MODEL_DIR (default /work/models-scratch, never into git); a path is used as is.
# Results: load-tests/results/quant_vs_llama_cpp-<UTC time>.{jsonl,md} (every measurement, the table).
#
# Also prompt processing (llama-bench's pp): one PREFILL_TOKENS-token prompt, llama.cpp's prompt eval
# against the server's time to first token (the server's figure includes the request's round trip).
# Knobs: ROUNDS (2), STREAMS (16), PROMPT_TOKENS (32), GEN_TOKENS (128), PREFILL_TOKENS (512; 0: skip), PEER_THREADS (2),
# PEER_BATCH_WAIT_MS (0: how long llama_cpp_decode.mjs waits for every sequence's next
# token before a batch goes out; 0 = node-llama-cpp's own schedule), SERVER_QUANTIZE (none: what `serve --quantize` gets), BENCH_FORMATS
# (as_loaded|int8: the bench_decode weight formats), QUIET_IDLE (0.85) and QUIET_WAIT_S (60): before
# each measurement wait up to QUIET_WAIT_S for the CPUs to be that idle over one second. ggml's
# worker threads spin at barriers, so llama.cpp with 2 threads collapses (to ~1 tok/s on a tiny
# model) when other processes hold the cores; the idle fraction is recorded with every line.
# CPUS (unset: all) pins every measured process to those CPUs (taskset -c), e.g. CPUS=0
# PEER_THREADS=1 compares one core against one core, which stays fair on a busy host.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
build="${BUILD:-$root/build}"
pagedserve="${PAGEDSERVE:-$build/pagedserve}"
loadgen="${LOADGEN:-$build/loadgen}"
bench_decode="${BENCH_DECODE:-$build/load-tests/bench_decode}"
make_model="${MAKE_MODEL:-$build/make-random-model}"
model_dir="${MODEL_DIR:-/work/models-scratch}"
tokenizer="$shared/models/tokenizer.bin"
rounds="${ROUNDS:-2}"
streams="${STREAMS:-16}"
prompt_tokens="${PROMPT_TOKENS:-32}"
gen_tokens="${GEN_TOKENS:-128}"
prefill_tokens="${PREFILL_TOKENS:-512}"
peer_threads="${PEER_THREADS:-2}"
peer_fa="${PEER_FLASH_ATTN:-on}"
peer_batch_wait_ms="${PEER_BATCH_WAIT_MS:-0}"
server_quantize="${SERVER_QUANTIZE:-none}"
bench_formats="${BENCH_FORMATS:-as_loaded|int8}"
quiet_idle="${QUIET_IDLE:-0.85}"
quiet_wait_s="${QUIET_WAIT_S:-60}"
peer="$root/load-tests/peer"
results="$root/load-tests/results"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
run="$results/quant_vs_llama_cpp-$stamp.jsonl"
scratch="$results/quant_vs_llama_cpp-$stamp"
mkdir -p "$results" "$scratch" "$model_dir"
pin=()
if [ -n "${CPUS:-}" ]; then
  pin=(taskset -c "$CPUS")
  # server_lib.sh starts "$pagedserve": a wrapper that execs it pinned (same pid).
  printf '#!/bin/sh\nexec taskset -c %s %s "$@"\n' "$CPUS" "$pagedserve" > "$scratch/pagedserve-pinned"
  chmod +x "$scratch/pagedserve-pinned"
  pagedserve="$scratch/pagedserve-pinned"
fi

# perf.md's shapes as make-random-model --gguf's arguments after RECIPE (dim hidden_dim n_layers n_heads
# n_kv_heads head_dim vocab_size seq_len n_experts n_experts_used expert_hidden_dim untied seed).
shape_args() {
  case "$1" in
    s110m) echo "768 2048 12 12 12 0 32000 1024 0 0 0 0 1" ;;
    tinyllama) echo "2048 5632 22 32 4 0 32000 2048 0 0 0 1 2" ;;
    *) return 1 ;;
  esac
}

# A path to a GGUF for NAME (a file, or SHAPE-TYPE written once into $model_dir); empty if not writable.
model_path() {
  local name="$1"
  if [ -f "$name" ]; then echo "$name"; return; fi
  local shape="${name%%-*}" type="${name#*-}" path="$model_dir/$name.gguf" args
  args="$(shape_args "$shape")" || { echo "unknown shape in '$name' (s110m, tinyllama)" >&2; return; }
  if [ ! -f "$path" ]; then
    echo "writing $path ..." >&2
    # shellcheck disable=SC2086
    "$make_model" --gguf "$path.part" llama "$type" $args "$tokenizer" >&2 || { rm -f "$path.part"; echo "skip $name: no writer for $type" >&2; return; }
    mv "$path.part" "$path"
  fi
  echo "$path"
}

# The CPUs' idle fraction over one second (/proc/stat: idle + iowait over all).
cpu_idle() {
  local a b
  a="$(head -1 /proc/stat)"; sleep 1; b="$(head -1 /proc/stat)"
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x); split(b, y); t = 0; for (i = 2; i <= 9; ++i) t += y[i] - x[i];
    printf "%.2f", (t > 0 ? (y[5] + y[6] - x[5] - x[6]) / t : 0) }'
}

# Waits (at most $quiet_wait_s) for idle CPUs; sets $idle and $load1 for the next measurement's tags.
wait_quiet() {
  local deadline=$((SECONDS + quiet_wait_s))
  while :; do
    idle="$(cpu_idle)"
    awk -v i="$idle" -v q="$quiet_idle" 'BEGIN { exit !(i >= q) }' && break
    [ "$SECONDS" -ge "$deadline" ] && { echo "  (CPUs only $idle idle; measuring anyway)" >&2; break; }
  done
  load1="$(cut -d' ' -f1 /proc/loadavg)"
}

tags() { echo "file=$1" "round=$2" "idle=$idle" "load1=$load1"; }

# llama.cpp, `sequences` at once, its lines appended to the run.
peer_decode() {
  local file="$1" round="$2" sequences="$3"
  wait_quiet
  # shellcheck disable=SC2046
  "${pin[@]}" node "$peer/llama_cpp_decode.mjs" --model "$path" --threads "$peer_threads" --flash-attn "$peer_fa" \
    --prompt-tokens "$prompt_tokens" --gen-tokens "$gen_tokens" --sequences "$sequences" --batch-wait-ms "$peer_batch_wait_ms" \
    | node "$peer/collect.mjs" tag $(tags "$file" "$round") who=llama.cpp | tee -a "$run" | cut -c1-240
}

# llama.cpp's prompt eval of one $prefill_tokens-token prompt.
peer_prefill() {
  local file="$1" round="$2"
  [ "$prefill_tokens" -gt 0 ] || return 0
  wait_quiet
  # shellcheck disable=SC2046
  "${pin[@]}" node "$peer/llama_cpp_decode.mjs" --model "$path" --threads "$peer_threads" --flash-attn "$peer_fa" \
    --prompt-tokens "$prefill_tokens" --gen-tokens 2 --sequences 1 --repeats 2 \
    | node "$peer/collect.mjs" tag $(tags "$file" "$round") who=llama.cpp phase=prefill | tee -a "$run" | cut -c1-240
}

# pagedserve's engine on the file (bench_decode), `streams` sequences, every format in $bench_formats.
engine_decode() {
  local file="$1" round="$2" sequences="$3" out="$scratch/bench-$1-$2-$3.json"
  wait_quiet
  PAGEDSERVE_DECODE_FILE="$path" "${pin[@]}" "$bench_decode" --benchmark_filter="^decode/file/($bench_formats)/streams:$sequences/" \
    --benchmark_out="$out" --benchmark_out_format=json > "$scratch/bench-$1-$2-$3.txt" 2>&1 \
    || { echo "bench_decode failed:" >&2; tail -5 "$scratch/bench-$1-$2-$3.txt" >&2; return 0; }
  # shellcheck disable=SC2046
  node "$peer/collect.mjs" bench "$out" $(tags "$file" "$round") who=pagedserve | tee -a "$run" | cut -c1-240
}

# pagedserve's server with `streams` WebSocket streams at once (loadgen), then its resident memory.
server_decode() {
  local file="$1" round="$2" log="$scratch/server-$1-$2.log" out="$scratch/loadgen-$1-$2.json"
  local blocks=$(( streams * ((prompt_tokens + gen_tokens + 15) / 16 + 1) ))
  # shellcheck source=load-tests/server_lib.sh
  . "$root/load-tests/server_lib.sh"
  # The file's own tokenizer (this script's files embed tokenizer.bin's): the server reads it from the
  # file (--tokenizer ""), loadgen too, for prompts of exact token lengths.
  start_server "$log" --model "$path" --tokenizer "" --quantize "$server_quantize" \
    --kv-blocks "$blocks" --max-num-seqs "$streams"
  until grep -q "allocated the KV pool" "$log"; do
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.2
  done
  wait_quiet
  "$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency "$streams" --num-requests "$streams" \
    --prompt-tokens "$prompt_tokens" --max-tokens "$gen_tokens" --ignore-eos --tokenizer "$path" \
    --label "pagedserve $file" --out "$out" > "$scratch/loadgen-$1-$2.txt" 2>&1 \
    || { echo "loadgen failed:" >&2; tail -5 "$scratch/loadgen-$1-$2.txt" >&2; }
  # shellcheck disable=SC2046
  [ -f "$out" ] && node "$peer/collect.mjs" loadgen "$out" $(tags "$file" "$round") who=pagedserve quantize="$server_quantize" \
    | tee -a "$run" | cut -c1-240
  # One long prompt at a time, answered with one token: the server's prompt processing.
  if [ "$prefill_tokens" -gt 0 ]; then
    wait_quiet
    "$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency 1 --num-requests 3 \
      --prompt-tokens "$prefill_tokens" --max-tokens 1 --ignore-eos --tokenizer "$path" \
      --label "pagedserve $file prefill" --out "$out.prefill" > "$scratch/loadgen-$1-$2-prefill.txt" 2>&1 \
      || { echo "loadgen (prefill) failed:" >&2; tail -5 "$scratch/loadgen-$1-$2-prefill.txt" >&2; }
    # shellcheck disable=SC2046
    [ -f "$out.prefill" ] && node "$peer/collect.mjs" loadgen "$out.prefill" $(tags "$file" "$round") who=pagedserve \
      phase=prefill prompt_tokens="$prefill_tokens" | tee -a "$run" | cut -c1-240
  fi
  local rss hwm kv
  rss="$(awk '/^VmRSS:/ { print $2 / 1024 }' "/proc/$server/status")"
  hwm="$(awk '/^VmHWM:/ { print $2 / 1024 }' "/proc/$server/status")"
  # "allocated the KV pool (N blocks of 16 tokens, f16, 12.5 MiB)"
  kv="$(grep -o 'allocated the KV pool ([^)]*)' "$log" | grep -o '[0-9.]* [KMG]iB' | tail -1 \
    | awk '{ m = $2 == "KiB" ? 1 / 1024 : $2 == "GiB" ? 1024 : 1; print $1 * m }')"
  echo "{\"file\":\"$file\",\"round\":$round,\"who\":\"pagedserve\",\"kind\":\"server_rss\",\"rss_mib\":$rss,\"hwm_mib\":$hwm,\"kv_pool_mib\":${kv:-0},\"kv_blocks\":$blocks,\"quantize\":\"$server_quantize\"}" \
    | tee -a "$run"
  stop_server
}

for tool in "$pagedserve" "$loadgen" "$bench_decode" "$make_model"; do
  [ -x "$tool" ] || { echo "missing $tool: ninja -C build pagedserve loadgen bench_decode make-random-model" >&2; exit 1; }
done
# The peer's packages at the locked versions (never at server start), when node_modules is stale. npm
# install, not npm ci: node-llama-cpp's other platforms' optional packages cannot enter the lock where
# the registry mirror lacks them, and npm ci refuses a lock without them.
if [ ! -d "$peer/node_modules/node-llama-cpp" ] || [ "$peer/package-lock.json" -nt "$peer/node_modules/.package-lock.json" ]; then
  (cd "$peer" && npm install --omit=optional --ignore-scripts --no-audit --no-fund)
fi

if [ "$#" -eq 0 ]; then
  set -- tinyllama-Q4_K_M tinyllama-Q4_0 s110m-Q8_0 s110m-Q4_0 s110m-Q4_K_M s110m-Q5_K_M s110m-Q6_K s110m-IQ4_XS \
    s110m-F16 s110m-BF16 s110m-F32
fi
echo "run: $run (rounds $rounds, streams $streams, prompt $prompt_tokens, gen $gen_tokens, prefill $prefill_tokens, llama.cpp threads $peer_threads, fa $peer_fa, server --quantize $server_quantize, CPUs ${CPUS:-all})"
for name in "$@"; do
  path="$(model_path "$name")"
  [ -n "$path" ] || continue
  file="$(basename "$path" .gguf)"
  echo "== $file ($(du -h "$path" | cut -f1))"
  for round in $(seq 1 "$rounds"); do
    peer_decode "$file" "$round" 1
    engine_decode "$file" "$round" 1
    peer_prefill "$file" "$round"
    peer_decode "$file" "$round" "$streams"
    engine_decode "$file" "$round" "$streams"
    server_decode "$file" "$round"
  done
done
node "$peer/collect.mjs" table "$run" | tee "${run%.jsonl}.md"
