# shellcheck shell=bash
# Sourced by the load-test scripts (which set $root first): starts `pagedserve serve` on a free
# loopback port.
#   start_server LOG [serve flags...]   sets $server (pid) and $port; the server is killed on exit
#   stop_server                         ends it (SIGTERM, then SIGKILL)
#   start_server_beside LOG [flags...]  one more server beside those already up (A/B scripts): sets
#                                       $port once /health answers; every one is ended on exit
#   s110m_long_context                  sets $pagedserve $loadgen $tokenizer $results $model: the
#                                       random-weight s110m with a 4096-token context (written once)

s110m_long_context() {
  local shared="${SHARED:-$root/../shared}"
  local make_model="${MAKE_MODEL:-$root/build/make-random-model}"
  pagedserve="${PAGEDSERVE:-$root/build/pagedserve}"
  loadgen="${LOADGEN:-$root/build/loadgen}"
  tokenizer="$shared/models/tokenizer.bin"
  results="$root/load-tests/results"
  model="${MODEL_DIR:-/tmp}/s110m-ctx4096.bin"
  mkdir -p "$results"
  [ -f "$model" ] || "$make_model" "$model" 768 2048 12 12 12 32000 4096 0 1
}
start_server() {
  local log="$1"
  shift
  "$pagedserve" serve --host 127.0.0.1 --port 0 "$@" 2> "$log" &
  server=$!
  trap stop_server EXIT
  port=""
  for _ in $(seq 1 600); do
    port="$(grep -o 'on http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')" || true
    [ -n "$port" ] && return 0
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "server did not start" >&2
  cat "$log" >&2
  exit 1
}

stop_server() {
  [ -n "${server:-}" ] || return 0
  kill -TERM "$server" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=""
}

servers_beside=()
start_server_beside() {
  local log="$1"
  shift
  "$pagedserve" serve --host 127.0.0.1 --port 0 "$@" > /dev/null 2> "$log" &
  servers_beside+=($!)
  trap stop_servers_beside EXIT
  port=""
  for _ in $(seq 1 1200); do
    port="$(grep -o 'on http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')" || true
    if [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" > /dev/null; then return 0; fi
    kill -0 "${servers_beside[-1]}" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "server did not start" >&2
  cat "$log" >&2
  exit 1
}

stop_servers_beside() {
  for p in "${servers_beside[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  servers_beside=()
}
