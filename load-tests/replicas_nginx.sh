#!/usr/bin/env bash
# Issue 9's figures: two replicas behind nginx (scripts/replicas.sh up) against one replica asked
# directly, and what the proxy adds to time to first token.
#   load-tests/replicas_nginx.sh     # random-weight stories15M shape (dim 288, 6 layers, vocab 32000)
# 1. Throughput: the same 101-token prompts and 128 output tokens at concurrency 1 and 16, over
#    WebSocket and SSE, against replica-1 directly and against nginx (which spreads over both).
# 2. Proxy TTFT: short requests one at a time, directly and through nginx. Each run's server-side
#    TTFT (the replicas' /metrics histogram sums) is subtracted from the client's, so what is left is
#    transport: its difference between the two paths is the proxy's share, and load from other work
#    on the host, which moves both TTFTs, largely cancels.
# Environment: PORT (nginx; replicas on PORT+1, PORT+2; default 18700), MODEL (a llama2.c .bin;
# default written once to $MODEL_DIR or /tmp), PAGEDSERVE_BUILD_DIR (default build/), REQUESTS (per
# throughput level at concurrency 16, default 64).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PAGEDSERVE_BUILD_DIR:-$root/build}"
loadgen="$build/loadgen"
tokenizer="${SHARED:-$root/../shared}/models/tokenizer.bin"
port="${PORT:-18700}"
model="${MODEL:-${MODEL_DIR:-/tmp}/s15m-ctx512.bin}"
requests="${REQUESTS:-64}"
results="$root/load-tests/results"
mkdir -p "$results"
[ -f "$model" ] || "$build/make-random-model" "$model" 288 768 6 6 6 32000 512 0 1

export PAGEDSERVE_REPLICAS_DIR="$results/replicas"
rm -rf "$PAGEDSERVE_REPLICAS_DIR"
PAGEDSERVE_BUILD_DIR="$build" "$root/scripts/replicas.sh" up -n 2 -p "$port" -- --model "$model" \
  --tokenizer "$tokenizer" --log-level warn > "$results/replicas-up.log" 2>&1 &
fleet=$!
trap 'kill -TERM "$fleet" 2>/dev/null; wait "$fleet" 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null && break
  kill -0 "$fleet" 2>/dev/null || { cat "$results/replicas-up.log" >&2; exit 1; }
  sleep 0.1
done

direct_ws="ws://127.0.0.1:$((port + 1))/v1/ws" nginx_ws="ws://127.0.0.1:$port/v1/ws"
direct_sse="http://127.0.0.1:$((port + 1))/v1/completions" nginx_sse="http://127.0.0.1:$port/v1/completions"
field() { grep -o "\"$2\": *[0-9.e+-]*" "$1" | sed -n "${3:-1}p" | sed 's/.*: *//'; }
# Sum of one series over both replicas' /metrics.
server_sum() {
  for p in $((port + 1)) $((port + 2)); do curl -fsS "http://127.0.0.1:$p/metrics"; done |
    awk -v name="$1" 'index($0, name "{") == 1 { s += $NF } END { printf "%.9f", s }'
}

# The processes listening on the given ports, and their CPU seconds (user + system) so far.
listener_pids() { for p in "$@"; do ss -Hltnp "sport = :$p" | grep -o 'pid=[0-9]*' | cut -d= -f2; done | sort -u; }
cpu_seconds() {
  local pids=("$@")
  for pid in "${pids[@]}"; do cat "/proc/$pid/stat" 2>/dev/null; done |
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.2f", s / hz }'
}
replica1_sum() { curl -fsS "http://127.0.0.1:$((port + 1))/metrics" | awk -v name="$1" 'index($0, name "{") == 1 { s += $NF } END { printf "%.9f", s }'; }

mapfile -t replica_pids < <(listener_pids $((port + 1)) $((port + 2)))
mapfile -t nginx_pids < <(listener_pids "$port")  # master and workers share the listening socket

echo "host load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
echo "1. throughput (output tok/s), 101-token prompts, 128 tokens out"
echo "   busy: share of the run replica-1's executor spent computing steps (direct); cpu: CPU seconds the"
echo "   replicas used per 1000 output tokens, direct and through nginx, and nginx's own"
printf '%-5s %5s %9s %9s %6s %5s %7s %7s %7s\n' api conc direct nginx ratio busy cpu_dir cpu_ngx nginx
for api in ws sse; do
  for conc in 1 16; do
    num=$((conc == 1 ? 24 : requests))
    for path in direct nginx; do
      eval "url=\$$path"'_'"$api"
      if [ "$path" = direct ]; then b0=$(replica1_sum pagedserve:executor_busy_seconds_total); fi
      r0=$(cpu_seconds "${replica_pids[@]}") n0=$(cpu_seconds "${nginx_pids[@]}")
      "$loadgen" --target "$url" --concurrency "$conc" --num-requests "$num" --prompt-tokens 101 --max-tokens 128 \
        --ignore-eos --tokenizer "$tokenizer" --label "$path-$api" --out "$results/replicas-$path-$api-c$conc.json" >/dev/null
      if [ "$path" = direct ]; then b1=$(replica1_sum pagedserve:executor_busy_seconds_total); fi
      r1=$(cpu_seconds "${replica_pids[@]}") n1=$(cpu_seconds "${nginx_pids[@]}")
      tokens=$(field "$results/replicas-$path-$api-c$conc.json" total_output_tokens)
      eval "cpu_$path=$(awk -v a="$r0" -v b="$r1" -v t="$tokens" 'BEGIN { printf "%.3f", (b - a) * 1000 / t }')"
      if [ "$path" = nginx ]; then
        cpu_proxy=$(awk -v a="$n0" -v b="$n1" -v t="$tokens" 'BEGIN { printf "%.3f", (b - a) * 1000 / t }')
      fi
    done
    busy=$(awk -v a="$b0" -v b="$b1" -v d="$(field "$results/replicas-direct-$api-c$conc.json" duration_s)" \
      'BEGIN { print (b - a) / d }')
    a=$(field "$results/replicas-direct-$api-c$conc.json" output_throughput)
    b=$(field "$results/replicas-nginx-$api-c$conc.json" output_throughput)
    printf '%-5s %5d %9.1f %9.1f %6.2f %5.2f %7.3f %7.3f %7.3f\n' "$api" "$conc" "$a" "$b" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')" "$busy" "$cpu_direct" "$cpu_nginx" "$cpu_proxy"
  done
done

echo "2. TTFT one request at a time, ms over 64 requests: client median; means of client, server, and"
echo "   client minus server (transport: loopback, nginx, and waiting for a CPU on a busy host)"
printf '%-5s %-7s %10s %10s %10s %10s\n' api path client_p50 client server transport
for api in ws sse; do
  for path in direct nginx; do
    eval "url=\$$path"'_'"$api"
    s0=$(server_sum pagedserve:time_to_first_token_seconds_sum) c0=$(server_sum pagedserve:time_to_first_token_seconds_count)
    "$loadgen" --target "$url" --concurrency 1 --num-requests 64 --prompt-tokens 101 --max-tokens 8 --ignore-eos \
      --tokenizer "$tokenizer" --label "ttft-$path-$api" --out "$results/replicas-ttft-$path-$api.json" >/dev/null
    s1=$(server_sum pagedserve:time_to_first_token_seconds_sum) c1=$(server_sum pagedserve:time_to_first_token_seconds_count)
    client=$(field "$results/replicas-ttft-$path-$api.json" mean_ttft_ms)
    server=$(awk -v a="$s0" -v b="$s1" -v m="$c0" -v n="$c1" 'BEGIN { print (b - a) * 1000 / (n - m) }')
    printf '%-5s %-7s %10.2f %10.2f %10.2f %10.2f\n' "$api" "$path" \
      "$(field "$results/replicas-ttft-$path-$api.json" median_ttft_ms)" "$client" "$server" \
      "$(awk -v c="$client" -v s="$server" 'BEGIN { print c - s }')"
  done
done
echo "host load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
