#!/usr/bin/env bash
# Issue 8's backpressure goal: the output throughput of 16 WebSocket streams with one client beside
# them that sends a long generation (500 tokens, 20 logprobs each: ~300 KB of frames) and never reads
# (4 KiB receive buffer), against the same 16 streams alone, on one server. Goal: within 10%.
# Pass/fail of the behaviour is tests/e2e/backpressure_test; this only measures.
#   load-tests/stalled_reader.sh          # stories260K from tests/data; ROUNDS=3 by default
#   SERVER_ARGS='--max-outbound-bytes 4194304' load-tests/stalled_reader.sh   # the default limit
#   STALLED_REQUESTS=16 load-tests/stalled_reader.sh   # enough output to pass the limit (client_too_slow)
#   STALLED_READS=1 load-tests/stalled_reader.sh       # control: the same client, reading all it gets
# Prints each round's throughputs with the server's peak RSS (sampled every 0.2 s), the median ratio,
# and RSS at the start and end; results in load-tests/results/stalled-reader-*.json.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
loadgen="${LOADGEN:-$root/build/loadgen}"
model="${MODEL:-$root/tests/data/models/stories260K.bin}"
tokenizer="${TOKENIZER:-$root/tests/data/models/tok512.bin}"
rounds="${ROUNDS:-3}"
results="$root/load-tests/results"
mkdir -p "$results"

log="$results/stalled-reader-server.log"
# shellcheck disable=SC2086
"$pagedserve" serve --model "$model" --tokenizer "$tokenizer" --host 127.0.0.1 --port 0 \
  ${SERVER_ARGS:---max-outbound-bytes 65536} 2> "$log" &
server=$!
stalled=""
trap 'kill -TERM $server 2>/dev/null; [ -n "$stalled" ] && kill $stalled 2>/dev/null; sleep 1; kill -KILL $server 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 300); do
  port="$(grep -o 'on http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')" || true
  [ -n "$port" ] && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "server did not start" >&2; exit 1; }

rss_mib() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$server/status"; }
streams() {  # 16 concurrent streams, REQUESTS (256) requests of 200 tokens; prints output tokens/s and the server's peak RSS (MiB)
  local sampler
  (while sleep 0.2; do rss_mib; echo; done > "$results/stalled-reader-$2.rss") &
  sampler=$!
  "$loadgen" --target "ws://127.0.0.1:$port/v1/ws" --concurrency 16 --num-requests "${REQUESTS:-256}" --prompt-tokens 16 \
    --max-tokens 200 --ignore-eos --tokenizer "$tokenizer" --seed "$1" --label "$2" \
    --out "$results/stalled-reader-$2.json" >/dev/null
  kill $sampler 2>/dev/null || true
  wait $sampler 2>/dev/null || true
  echo "$(grep -o '"output_throughput": *[0-9.]*' "$results/stalled-reader-$2.json" | head -1 | sed 's/.*: *//')" \
    "$(sort -n "$results/stalled-reader-$2.rss" | tail -1)"
}

# A WebSocket client that sends its generations and then sleeps without reading a byte.
stall() {  # exec: the background job is python itself, so kill ends it
  exec python3 - "$port" "${STALLED_REQUESTS:-1}" "${STALLED_READS:-0}" <<'PY'
import base64, json, os, socket, struct, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
for i in range(int(sys.argv[2])):
    payload = json.dumps({"type": "generate", "id": "slow%d" % i, "prompt": "Once upon a time",
                          "params": {"max_tokens": 500, "ignore_eos": True, "logprobs": 20}}).encode()
    mask = os.urandom(4)
    n = len(payload)
    header = struct.pack("!BB", 0x81, 0x80 | n) if n < 126 else struct.pack("!BBH", 0x81, 0x80 | 126, n)
    s.sendall(header + mask + bytes(b ^ mask[j % 4] for j, b in enumerate(payload)))
while sys.argv[3] == "1" and s.recv(65536):
    pass
time.sleep(3600)
PY
}

echo "server RSS at the start $(rss_mib) MiB; host load average $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for r in $(seq 1 "$rounds"); do
  read -r alone alone_rss <<< "$(streams "$r" "alone-$r")"
  stall &
  stalled=$!
  sleep 0.2  # its request is in the engine and its socket is filling
  read -r beside beside_rss <<< "$(streams "$r" "beside-$r")"
  kill $stalled 2>/dev/null || true
  wait $stalled 2>/dev/null || true
  stalled=""
  ratio="$(awk -v a="$alone" -v b="$beside" 'BEGIN { printf "%.3f", b / a }')"
  ratios+=("$ratio")
  echo "round $r: 16 streams alone ${alone} tok/s (server peak RSS ${alone_rss} MiB)," \
       "beside a stalled reader ${beside} tok/s (peak RSS ${beside_rss} MiB), ratio ${ratio}"
done
echo "server RSS at the end $(rss_mib) MiB; host load average $(cut -d' ' -f1-3 /proc/loadavg)"
median="$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
echo "median ratio ${median} (goal >= 0.90); client_too_slow endings: $(grep -c 'client not reading' "$log" || true)"
