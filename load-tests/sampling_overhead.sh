#!/usr/bin/env bash
# Non-greedy decoding through the server: tok/s at 1 and 16 streams at temperature 0.8 with top_p 0.95
# (and, SETTINGS=all, top_k 40 and min_p 0.05), for one or two builds alternating (A B A B ...), each
# round a fresh server per build. Per round: output tok/s per level, and the executor's busy time per
# step (/health's executor_busy_seconds over steps: forward pass + sampling of the step's rows).
#   load-tests/sampling_overhead.sh                          # this tree's build/, 3 rounds
#   load-tests/sampling_overhead.sh /tmp/old-build build     # an older build against this one
#   ROUNDS=4 STREAMS=1,16 SETTINGS=all load-tests/sampling_overhead.sh A B
# A build directory needs pagedserve and loadgen. The model is the random-weight s110m
# ($MODEL_DIR/s110m.bin, int8 weights, written once as serving_overhead.sh writes it): its logits are
# flat, so top_p 0.95 keeps most of the 32000-token vocabulary, the sampler's worst case.
set -Eeuo pipefail
trap 'echo "sampling_overhead.sh: line $LINENO failed (exit $?)" >&2' ERR
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
tokenizer="$shared/models/tokenizer.bin"
model="${MODEL_DIR:-/tmp}/s110m.bin"
rounds="${ROUNDS:-3}"
streams="${STREAMS:-1,16}"
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=("$root/build")
make_model="${MAKE_MODEL:-$root/build/make-random-model}"
[ -f "$model" ] || "$make_model" "$model" 768 2048 12 12 12 32000 1024 0 1
declare -A settings=([top_p]='{"top_p":0.95}')
if [ "${SETTINGS:-top_p}" = all ]; then settings[top_k]='{"top_k":40}'; settings[min_p]='{"min_p":0.05}'; fi
out="$(mktemp -d)"
trap 'stop_server; rm -rf "$out"' EXIT

# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"

rates() {  # loadgen results JSON -> output tok/s per level, comma-separated
  python3 -c 'import json,sys; print(",".join("%.1f" % l["output_throughput"] for l in json.load(open(sys.argv[1]))["levels"]))' "$1"
}

busy_per_step() {  # the executor's mean busy time per step, in microseconds, from /health
  curl -s "http://127.0.0.1:$port/health" |
    python3 -c 'import json,sys; h=json.load(sys.stdin); print("%.0f" % (1e6 * h["executor_busy_seconds"] / max(1, h["steps"])))'
}

for round in $(seq 1 "$rounds"); do
  for name in "${!settings[@]}"; do
    for i in "${!builds[@]}"; do
      b="${builds[$i]}"
      pagedserve="$b/pagedserve"
      start_server "$out/server.log" --model "$model" --tokenizer "$tokenizer" --quantization int8 \
        --kv-blocks 2048 --max-num-seqs 64 --max-num-batched-tokens 512
      "$b/loadgen" --target "http://127.0.0.1:$port/v1/completions" --concurrency "$streams" --prompt-tokens 32 \
        --max-tokens 64 --ignore-eos --temperature 0.8 --seed 1 --extra-body "${settings[$name]}" \
        --tokenizer "$tokenizer" --out "$out/run.json" > /dev/null
      busy="$(busy_per_step)"
      stop_server
      r="$(rates "$out/run.json")"
      echo "round $round $name build $i ($b): tok/s at $streams streams: $r; executor busy ${busy} us/step;" \
        "load $(cut -d' ' -f1 /proc/loadavg)"
      echo "$name $i $r" >> "$out/rows"
    done
  done
done

echo "per setting and build, best of $rounds rounds: tok/s at $streams streams"
python3 - "$out/rows" <<'EOF'
import sys
best = {}
for line in open(sys.argv[1]):
    name, build, rates = line.split()
    rates = [float(x) for x in rates.split(",")]
    key = (name, build)
    best[key] = [max(a, b) for a, b in zip(best.get(key, rates), rates)]
for (name, build), rates in sorted(best.items()):
    base = best[(name, "0")]
    print("%s build %s: %s" % (name, build, ", ".join("%.1f (%.2fx)" % (r, r / b0) for r, b0 in zip(rates, base))))
EOF
