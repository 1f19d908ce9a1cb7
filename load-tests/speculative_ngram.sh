#!/usr/bin/env bash
# Issue 20's benchmark: decode tok/s with and without n-gram speculative decoding, both servers up
# at once and requests alternating between them (best of N each), on a repetitive workload: prompts
# whose continuation repeats them (a story told twice, a function to quote back, a list to repeat).
# Reports batch-1 tok/s, the acceptance rate and the ratio, then 16 concurrent streams the same way.
#
#   load-tests/speculative_ngram.sh                 stories260K (tests/data/models)
#   MODEL=s110m load-tests/speculative_ngram.sh     a random-weight s110m-shaped model (written once to
#                                                   /tmp with build/make-random-model; greedy decoding
#                                                   of random weights falls into loops n-gram lookup hits)
# Env: ROUNDS (default 5), MAX_TOKENS (default 256), SPEC (the --speculative-config JSON).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
rounds="${ROUNDS:-5}"
max_tokens="${MAX_TOKENS:-256}"
spec="${SPEC:-{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4,\"prompt_lookup_min\":1\}}"
case "${MODEL:-stories260K}" in
  stories260K) model_args=(--model "$root/tests/data/models/stories260K.bin" --tokenizer "$root/tests/data/models/tok512.bin") ;;
  s110m)
    model="/tmp/s110m-random-spec.bin"
    [ -f "$model" ] || "${MAKE_MODEL:-$root/build/make-random-model}" "$model" 768 2048 12 12 12 32000 1024 0 1
    model_args=(--model "$model" --tokenizer "${SHARED:-$root/../shared}/models/tokenizer.bin") ;;
  *) model_args=(--model "$MODEL" --tokenizer "$TOKENIZER") ;;
esac

# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
start_server_beside /tmp/spec-bench-plain.log "${model_args[@]}"
plain_port="$port"
start_server_beside /tmp/spec-bench-ngram.log "${model_args[@]}" --speculative-config "$spec"
spec_port="$port"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); model ${MODEL:-stories260K}; $spec"

PYTHONPATH="$root/load-tests" python3 - "$plain_port" "$spec_port" "$rounds" "$max_tokens" <<'PY'
import sys
from functools import partial
import spec_client
plain, spec, rounds, max_tokens = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
story = "Tim and Sue went to the park. They saw a big dog. The dog was happy and ran to them. "
code = "def add(a, b):\n    total = a + b\n    print(total)\n    return total\n\n"
listing = "apples, pears, plums, figs, dates, limes, "
prompts = [story * 3 + "Tim and Sue", code * 3 + "def add(a, b):\n", listing * 4 + "apples,"]
complete = partial(spec_client.complete, max_tokens=max_tokens)
streams = lambda port, n: spec_client.streams(port, prompts, n, max_tokens)


for p in prompts: complete(plain, p); complete(spec, p)  # warm up (and let the step cost model learn)
print(f"{'prompt':>8} {'plain tok/s':>12} {'ngram tok/s':>12} {'speedup':>8} {'accepted':>9}")
for i, p in enumerate(prompts):
    best = {plain: 0.0, spec: 0.0}
    acc = drafted = 0
    for _ in range(rounds):
        for port in (plain, spec):  # alternating, best of the rounds
            n, secs, a, d, text = complete(port, p)
            best[port] = max(best[port], n / secs)
            if port == spec: acc, drafted = a, d
    same = complete(plain, p)[4] == complete(spec, p)[4]
    print(f"{i:>8} {best[plain]:>12.1f} {best[spec]:>12.1f} {best[spec] / best[plain]:>7.2f}x "
          f"{acc}/{drafted}{'' if same else '  OUTPUT DIFFERS'}")
best = {plain: 0.0, spec: 0.0}
acc = drafted = 0
for _ in range(max(1, rounds // 2)):
    for port in (plain, spec):
        tps, a, d = streams(port, 16)
        best[port] = max(best[port], tps)
        if port == spec: acc, drafted = a, d
print(f"{'16 strm':>8} {best[plain]:>12.1f} {best[spec]:>12.1f} {best[spec] / best[plain]:>7.2f}x {acc}/{drafted}")
PY
