#!/usr/bin/env bash
# Issue 20's draft-model benchmark: batch-1 decode tok/s with a draft model against the measured
# acceptance, and 16 streams, each server A/B against one without speculation, both up at once and
# requests alternating between them (best of N). The pair is random-weight with controlled agreement:
# the target is a random Llama whose layers' output projections (wo, w2) are scaled by ALPHA, so each
# layer nudges the residual stream the embedding set; each draft is the target cut to its first L
# layers (same embeddings, classifier, tokenizer): fewer layers, cheaper and less in agreement, and
# the smaller ALPHA, the more the cut model agrees with the whole.
#
#   load-tests/speculative_draft.sh
# Env: ROUNDS (default 4), MAX_TOKENS (default 128), LAYERS (drafts' layer counts, default "1 2 4"), ALPHA (0.1),
#      K (num_speculative_tokens, default 4), SHAPE (target: dim hidden layers heads kv_heads vocab seq, default
#      "512 1536 12 8 8 512 1024": stories260K's 512-token vocabulary, so the classifier, which every
#      draft pass pays in full, stays small beside the layers, as for a real draft of a large target),
#      TOKENIZER (default tests/data/models/tok512.bin).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
rounds="${ROUNDS:-4}"
max_tokens="${MAX_TOKENS:-128}"
k="${K:-4}"
read -r dim hidden layers heads kv vocab seq <<< "${SHAPE:-512 1536 12 8 8 512 1024}"
tokenizer="${TOKENIZER:-$root/tests/data/models/tok512.bin}"
dir=/tmp/spec-draft-bench
mkdir -p "$dir"
alpha="${ALPHA:-0.1}"
random="$dir/random-$dim-$layers.bin"
target="$dir/target-$dim-$layers-$alpha.bin"
[ -f "$random" ] || "${MAKE_MODEL:-$root/build/make-random-model}" "$random" "$dim" "$hidden" "$layers" "$heads" "$kv" "$vocab" "$seq" 0 1
# The random model's first n layers, wo and w2 scaled by alpha, as a llama2.c checkpoint (run.c's tensor order).
truncate_layers() {  # truncate_layers N OUT
  python3 - "$random" "$1" "$2" "$alpha" <<'PY'
import array, struct, sys
src, n, out, alpha = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
data = open(src, "rb").read()
dim, hidden, L, heads, kv_heads, vocab, seq = struct.unpack("7i", data[:28])
hs, shared = dim // heads, vocab > 0
kv_dim = kv_heads * hs
f = 4
off = 28
parts = [data[:0]]
def take(count):
    global off
    b = data[off:off + count * f]; off += count * f; return b
emb = take(abs(vocab) * dim)
per_layer = [dim, dim * dim, dim * kv_dim, dim * kv_dim, dim * dim, dim, hidden * dim, dim * hidden, hidden * dim]
groups = [take(L * s) for s in per_layer]
def scaled(b):
    a = array.array("f"); a.frombytes(b)
    return array.array("f", (x * alpha for x in a)).tobytes()
groups[4], groups[7] = scaled(groups[4][:n * per_layer[4] * f]), scaled(groups[7][:n * per_layer[7] * f])
rest = data[off:]  # rms_final, freq_cis, classifier
body = emb + b"".join(g[:n * s * f] for g, s in zip(groups, per_layer)) + rest
open(out, "wb").write(struct.pack("7i", dim, hidden, n, heads, kv_heads, vocab, seq) + body)
PY
}

[ -f "$target" ] || truncate_layers "$layers" "$target"
# shellcheck source=load-tests/server_lib.sh
. "$root/load-tests/server_lib.sh"
served=(--model "$target" --tokenizer "$tokenizer" --kv-blocks 1024)
start_server_beside "$dir/plain.log" "${served[@]}"
plain_port="$port"
ports=()
for n in ${LAYERS:-1 2 4}; do
  draft="$dir/draft-$dim-$layers-$alpha-$n.bin"
  [ -f "$draft" ] || truncate_layers "$n" "$draft"
  start_server_beside "$dir/draft-$n.log" "${served[@]}" --speculative-config "{\"model\":\"$draft\",\"num_speculative_tokens\":$k}"
  ports+=("$n:$port")
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); target $dim x $layers layers (alpha $alpha), vocab $vocab; k=$k"

PYTHONPATH="$root/load-tests" python3 - "$plain_port" "$rounds" "$max_tokens" "${ports[@]}" <<'PY'
import sys
from functools import partial
import spec_client
plain, rounds, max_tokens = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
drafts = [(int(a.split(":")[0]), int(a.split(":")[1])) for a in sys.argv[4:]]
prompts = ["Once upon a time, there was a", "The little dog ran to the", "def add(a, b):\n    return"]
complete = partial(spec_client.complete, max_tokens=max_tokens)
streams = lambda port, n: spec_client.streams(port, prompts, n, max_tokens)


for p in prompts[:1]:
    complete(plain, p)
    for _, port in drafts: complete(port, p)  # warm up (the step cost model learns)
print(f"{'draft':>12} {'plain tok/s':>12} {'draft tok/s':>12} {'speedup':>8} {'acceptance':>11}  same output")
for layers, port in drafts:
    best = {plain: 0.0, port: 0.0}
    acc = drafted = 0
    same = True
    for _ in range(rounds):
        for p in prompts:
            outs = {}
            for q in (plain, port):  # alternating
                n, secs, a, d, text = complete(q, p)
                best[q] = max(best[q], n / secs)
                outs[q] = text
                if q == port: acc, drafted = acc + a, drafted + d
            same &= outs[plain] == outs[port]
    print(f"{str(layers) + ' layers':>12} {best[plain]:>12.1f} {best[port]:>12.1f} {best[port] / best[plain]:>7.2f}x "
          f"{acc / max(1, drafted):>10.0%}  {'yes' if same else 'NO'}")
layers, port = drafts[-1]
best = {plain: 0.0, port: 0.0}
acc = drafted = 0
for _ in range(max(1, rounds // 2)):
    for q in (plain, port):
        tps, a, d = streams(q, 16)
        best[q] = max(best[q], tps)
        if q == port: acc, drafted = acc + a, drafted + d
print(f"{'16 streams':>12} {best[plain]:>12.1f} {best[port]:>12.1f} {best[port] / best[plain]:>7.2f}x "
      f"{acc / max(1, drafted):>10.0%}  ({layers}-layer draft)")
PY
