#!/usr/bin/env bash
# Issue 23's serving overhead at one stream: the server's decode rate (1000 / median TPOT, over
# WebSocket and over HTTP SSE) against bench_decode's tok/s for the same weights, measured in the
# same run, one after the other, for one or two builds alternating (A B A B ...). Prints every
# round and, per build, the ratio of the best server rate to the best bench_decode rate. Per round also
# the executor's mean idle time between two steps (/health's executor_gap_seconds over steps) and the
# server's voluntary context switches per WebSocket token (threads that went to sleep and had to be
# woken), two figures the machine's load moves far less than tok/s.
#   load-tests/serving_overhead.sh                      # this tree's build/, 3 rounds
#   load-tests/serving_overhead.sh /work/main/build build   # main's build against this one
#   ROUNDS=5 QUANT=int8 load-tests/serving_overhead.sh A B
# The model is the random-weight s110m ($MODEL_DIR/s110m.bin, written once), int8 weights; then
# (TINY=0 skips it) stories260K through the server alone, where the per-token path dominates.
set -Eeuo pipefail
trap 'echo "serving_overhead.sh: line $LINENO failed (exit $?)" >&2' ERR
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
tokenizer="$shared/models/tokenizer.bin"
model="${MODEL_DIR:-/tmp}/s110m.bin"
rounds="${ROUNDS:-3}"
quant="${QUANT:-int8}"
requests="${REQUESTS:-4}"
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=("$root/build")
[ -f "$model" ] || "${builds[0]}/make-random-model" "$model" 768 2048 12 12 12 32000 1024 0 1
out="$(mktemp -d)"
trap 'stop_server; rm -rf "$out"' EXIT

# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"

median_tpot_rate() {  # loadgen results JSON -> 1000 / median TPOT (tok/s of one stream's decode)
  python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["levels"][0]; print("%.1f" % (1000.0 / l["median_tpot_ms"]))' "$1"
}

gap_per_step() {  # the executor's mean idle time between two steps, in microseconds, from /health
  curl -s "http://127.0.0.1:$port/health" |
    python3 -c 'import json,sys; h=json.load(sys.stdin); print("%.0f" % (1e6 * h["executor_gap_seconds"] / max(1, h["steps"])))'
}

switches() {  # the server's voluntary context switches so far, all threads (each a thread that blocked)
  cat /proc/"$server"/task/*/status | awk '/^voluntary_ctxt_switches/ { n += $2 } END { print n }'
}

for round in $(seq 1 "$rounds"); do
  for i in "${!builds[@]}"; do
    b="${builds[$i]}"
    bench="$(PAGEDSERVE_S110M="$model" "$b/load-tests/bench_decode" --benchmark_filter="s110m/$quant/streams:1/" \
      --benchmark_format=csv 2>/dev/null | python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if r and r[0].startswith("decode")]
print("%.1f" % (1e3 / float(rows[0][2])))')"  # real_time column, ms per step
    pagedserve="$b/pagedserve"
    start_server "$out/server.log" --model "$model" --tokenizer "$tokenizer" --quantization "$quant" \
      --kv-blocks 2048 --max-num-seqs 64 --max-num-batched-tokens 512
    common=(--concurrency 1 --num-requests "$requests" --prompt-tokens 101 --max-tokens 128 --ignore-eos
      --tokenizer "$tokenizer")
    before="$(switches)"
    "$b/loadgen" --target "ws://127.0.0.1:$port/v1/ws" "${common[@]}" --out "$out/ws.json" > /dev/null
    per_token="$(python3 -c 'import sys; print("%.1f" % ((int(sys.argv[2]) - int(sys.argv[1])) / (int(sys.argv[3]) * 128)))' \
      "$before" "$(switches)" "$requests")"
    "$b/loadgen" --target "http://127.0.0.1:$port/v1/completions" "${common[@]}" --out "$out/sse.json" > /dev/null
    ws="$(median_tpot_rate "$out/ws.json")"
    sse="$(median_tpot_rate "$out/sse.json")"
    gap="$(gap_per_step)"
    stop_server
    load="$(cut -d' ' -f1 /proc/loadavg)"
    echo "round $round build $i ($b): bench_decode $bench tok/s, ws $ws, sse $sse; between steps ${gap} us," \
      "$per_token thread blocks per ws token; load $load"
    echo "$i $bench $ws $sse" >> "$out/rows"
  done
done

echo "per build, best of $rounds: server / bench_decode"
awk '{ if ($2 > b[$1]) b[$1] = $2; if ($3 > w[$1]) w[$1] = $3; if ($4 > s[$1]) s[$1] = $4 }
     END { for (i in b) printf "build %s: bench_decode %.1f, ws %.1f (%.3f), sse %.1f (%.3f)\n", i, b[i], w[i], w[i] / b[i], s[i], s[i] / b[i] }' \
  "$out/rows" | sort

# stories260K (tests/data/models): a step of ~0.1 ms, so the per-token path outside the forward pass
# is most of a token's time and a change to it shows through the machine's noise. Server only.
[ "${TINY:-1}" = 1 ] || exit 0
for round in $(seq 1 "$rounds"); do
  for i in "${!builds[@]}"; do
    b="${builds[$i]}"
    pagedserve="$b/pagedserve"
    start_server "$out/tiny.log" --model "$root/tests/data/models/stories260K.bin" \
      --tokenizer "$root/tests/data/models/tok512.bin"
    "$b/loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency 1 --num-requests 8 --prompt-tokens 32 \
      --max-tokens 256 --ignore-eos --tokenizer "$root/tests/data/models/tok512.bin" --out "$out/tiny.json" > /dev/null
    gap="$(gap_per_step)"
    stop_server
    echo "stories260K round $round build $i: ws $(median_tpot_rate "$out/tiny.json") tok/s; between steps ${gap} us;" \
      "load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
