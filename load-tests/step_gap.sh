#!/usr/bin/env bash
# Issue 23's async-scheduling question: how long the engine thread is idle between two steps at 1, 16
# and 64 streams, against the step itself. Per build (alternating, A B A B ...), round and level: a
# fresh server on the random-weight s110m (int8), 2 x streams requests (min 4) of 101 prompt and 128
# output tokens with ignore_eos over WebSocket (PROTOCOL=sse: HTTP SSE), then /health's executor
# figures: the mean compute time per step, the mean idle time between two steps that followed each
# other, and their ratio; with the output tok/s and the load average. At the end, per build and level,
# the best tok/s and the lowest gap share of the rounds (docs/per-token-path.md).
#   load-tests/step_gap.sh                                  # this tree's build/, 3 rounds
#   load-tests/step_gap.sh /work/base0 build                # main's binary against this one
#   ROUNDS=5 LEVELS="16 64" load-tests/step_gap.sh A B
# A build is a directory holding `pagedserve`; loadgen comes from the first one that has it (LOADGEN=).
set -Eeuo pipefail
trap 'echo "step_gap.sh: line $LINENO failed (exit $?)" >&2' ERR
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${SHARED:-$root/../shared}"
tokenizer="$shared/models/tokenizer.bin"
model="${MODEL_DIR:-/tmp}/s110m.bin"
rounds="${ROUNDS:-3}"
levels="${LEVELS:-1 16 64}"
protocol="${PROTOCOL:-ws}"
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=("$root/build")
loadgen="${LOADGEN:-}"
for b in "${builds[@]}" "$root/build"; do [ -n "$loadgen" ] || { [ -x "$b/loadgen" ] && loadgen="$b/loadgen"; }; done
[ -f "$model" ] || "$root/build/make-random-model" "$model" 768 2048 12 12 12 32000 1024 0 1
out="$(mktemp -d)"
trap 'stop_server; rm -rf "$out"' EXIT

# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"

for round in $(seq 1 "$rounds"); do
  for streams in $levels; do
    for i in "${!builds[@]}"; do
      pagedserve="${builds[$i]}/pagedserve"
      start_server "$out/server.log" --model "$model" --tokenizer "$tokenizer" --quantization int8 \
        --kv-blocks 2048 --max-num-seqs 64 --max-num-batched-tokens 512
      target="ws://127.0.0.1:$port/v1/ws"
      [ "$protocol" = sse ] && target="http://127.0.0.1:$port/v1/completions"
      requests=$((2 * streams > 4 ? 2 * streams : 4))
      "$loadgen" --target "$target" --concurrency "$streams" --num-requests "$requests" --prompt-tokens 101 \
        --max-tokens 128 --ignore-eos --tokenizer "$tokenizer" --out "$out/run.json" > /dev/null
      curl -s "http://127.0.0.1:$port/health" > "$out/health.json"
      stop_server
      python3 - "$out/run.json" "$out/health.json" "$round" "$streams" "$i" "${builds[$i]}" "$(cut -d' ' -f1 /proc/loadavg)" \
        >> "$out/rows" <<'PY'
import json, sys
run, health, rnd, streams, build, path, load = sys.argv[1:]
level = json.load(open(run))["levels"][0]
h = json.load(open(health))
steps = max(1, h["steps"])
busy, gap = 1e6 * h["executor_busy_seconds"] / steps, 1e6 * h["executor_gap_seconds"] / steps
print(f"{build} {streams} {level['output_throughput']:.1f} {gap:.0f} {busy:.0f} {100 * gap / busy:.2f}")
sys.stderr.write(f"round {rnd} streams {streams} build {build} ({path}): {level['output_throughput']:.1f} tok/s, "
                 f"step {busy:.0f} us, between steps {gap:.0f} us ({100 * gap / busy:.2f} %); load {load}\n")
PY
    done
  done
done

echo "per build and level, best of $rounds rounds: tok/s, lowest gap between steps (us, share of a step)"
sort -k1,1n -k2,2n "$out/rows" | awk '
  { k = $1 " " $2; if (!(k in t) || $3 > t[k]) t[k] = $3; if (!(k in g) || $6 < s[k]) { g[k] = $4; s[k] = $6 } }
  END { for (k in t) { split(k, p, " "); printf "build %s, %2s streams: %7.1f tok/s, gap %5d us (%.2f %%)\n", p[1], p[2], t[k], g[k], s[k] } }' |
  sort -k2,2 -k3,3n
