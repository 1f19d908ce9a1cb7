#!/usr/bin/env bash
# Several pagedserve replicas behind nginx on one machine, loopback only (docs/reference.md: "Running several
# replicas behind nginx").
#
#   scripts/replicas.sh render DIR LISTEN REPLICA...
#       writes DIR/nginx.conf and DIR/pagedserve.conf from config/nginx/ (LISTEN and each REPLICA as
#       host:port); then run `nginx -p DIR -c DIR/nginx.conf -e stderr`
#   scripts/replicas.sh up [-n N] [-p PORT] [-- SERVE_FLAGS...]
#       starts N replicas (default 2) named replica-1..N on 127.0.0.1:PORT+1..PORT+N and nginx on
#       127.0.0.1:PORT (default 8000), each with SERVE_FLAGS (e.g. --model M.bin --tokenizer T.bin);
#       stops them all on Ctrl-C or when one exits. Logs and configs go to $PAGEDSERVE_REPLICAS_DIR
#       (default: a new temp dir). The server binary is $PAGEDSERVE_BUILD_DIR/pagedserve (default build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# render DIR LISTEN REPLICA...: the template with @LISTEN@ replaced and each @REPLICA@ line repeated
# (comment lines are copied as they are).
render() {
  (($# >= 3)) || usage
  local dir=$1 listen=$2
  shift 2
  mkdir -p "$dir/tmp"
  chmod 755 "$dir"  # nginx started as root runs its workers as nobody
  awk -v listen="$listen" -v replicas="$*" '
    BEGIN { n = split(replicas, r, " ") }
    /^[[:space:]]*#/ { print; next }
    /@REPLICA@/ { for (i = 1; i <= n; i++) { line = $0; gsub(/@REPLICA@/, r[i], line); print line } next }
    { gsub(/@LISTEN@/, listen); print }
  ' "$root/config/nginx/pagedserve.conf.template" > "$dir/pagedserve.conf"
  cp "$root/config/nginx/nginx.conf" "$dir/nginx.conf"
}

nginx_binary() {
  command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || {
    echo "nginx not found: scripts/install-deps.sh installs it (Debian package nginx-light)" >&2
    exit 1
  }
}

# Waits up to 15 s for GET /health on 127.0.0.1:$1 to answer 200.
wait_healthy() {
  for _ in $(seq 150); do
    curl -fsS -o /dev/null "http://127.0.0.1:$1/health" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no healthy server on 127.0.0.1:$1" >&2
  return 1
}

up() {
  local n=2 port=8000
  while (($#)); do
    case $1 in
      -n) n=$2; shift 2 ;;
      -p) port=$2; shift 2 ;;
      --) shift; break ;;
      *) usage ;;
    esac
  done
  local bin="${PAGEDSERVE_BUILD_DIR:-$root/build}/pagedserve"
  [ -x "$bin" ] || { echo "$bin not built: run scripts/build.sh" >&2; exit 1; }
  local nginx dir
  nginx=$(nginx_binary)
  dir=${PAGEDSERVE_REPLICAS_DIR:-$(mktemp -d /tmp/pagedserve-replicas.XXXXXX)}
  mkdir -p "$dir"
  pids=()
  trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' EXIT
  trap 'exit 130' INT TERM
  local replicas=()
  for i in $(seq "$n"); do
    local p=$((port + i))
    "$bin" serve --host 127.0.0.1 --port "$p" --replica-name "replica-$i" "$@" 2> "$dir/replica-$i.log" &
    pids+=($!)
    replicas+=("127.0.0.1:$p")
  done
  for i in $(seq "$n"); do wait_healthy $((port + i)) || { cat "$dir/replica-$i.log" >&2; exit 1; }; done
  render "$dir" "127.0.0.1:$port" "${replicas[@]}"
  "$nginx" -p "$dir" -c "$dir/nginx.conf" -e stderr 2> "$dir/nginx.log" &
  pids+=($!)
  wait_healthy "$port" || { cat "$dir/nginx.log" >&2; exit 1; }
  cat <<MSG
nginx on http://127.0.0.1:$port (WebSocket ws://127.0.0.1:$port/v1/ws) in front of:
$(for i in $(seq "$n"); do echo "  replica-$i  http://127.0.0.1:$((port + i))  (/health, /metrics)"; done)
same replica for one conversation: send header X-Session-Id (or ?session_id= on /v1/ws)
logs and configs: $dir (access.log names the upstream of each request); Ctrl-C stops everything
MSG
  wait -n "${pids[@]}"
  echo "a process exited: stopping the rest" >&2
}

case ${1:-} in
  render) shift; render "$@" ;;
  up) shift; up "$@" ;;
  *) usage ;;
esac
