#!/usr/bin/env bash
# The program as installed: `cmake --install` of the build tree under test into a temporary prefix,
# then the installed binary started from another folder with no model flag must serve the shipped
# English model and the chat page over 127.0.0.1, found beside itself (share/pagedserve), not in the
# source tree. Its greedy completion over HTTP equals the installed `generate`'s.
# usage: installed_program_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/pagedserve share/pagedserve/web/index.html share/pagedserve/models/stories260K.bin \
         share/pagedserve/models/tok512.bin share/pagedserve/models/stories260K-LICENSE.txt share/doc/pagedserve/LICENSE; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
# Another folder, and the build tree out of reach: the copy must find its data from its own path.
mkdir "$work/elsewhere"
cd "$work/elsewhere"
# The log exists before the server starts: its redirection happens in the background child, after the
# loop below may already read the file.
: >"$work/server.log"
"$work/prefix/bin/pagedserve" serve --host 127.0.0.1 --port 0 2>"$work/server.log" &
server_pid=$!
scale=${PAGEDSERVE_TEST_TIME_SCALE:-1}
for _ in $(seq 1 $((100 * ${scale%.*}))); do
  port=$(sed -n "s|.*serving '.*' .*on http://127.0.0.1:\([0-9]*\).*|\1|p" "$work/server.log")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "${port:-}" ] || { echo "the installed server did not start:"; cat "$work/server.log"; exit 1; }
grep -q "serving the default model stories260K (.*) from $work/prefix/share/pagedserve/models/stories260K.bin" "$work/server.log" ||
  { echo "not the installed default model:"; cat "$work/server.log"; exit 1; }
page=$(curl -sf "http://127.0.0.1:$port/")
[[ "$page" == *"<title>"* ]] || { echo "no chat page at /: $page"; exit 1; }
reply=$(curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}')
expected=$("$work/prefix/bin/pagedserve" generate --prompt "Once upon a time" --max-tokens 24 2>/dev/null)
text=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["choices"][0]["text"], end="")' "$reply")
[ "$text" = "$expected" ] || { printf 'server: %s\ngenerate: %s\n' "$text" "$expected"; exit 1; }
# English: a story, i.e. mostly words of letters (the demo model's bytes are not).
words=$(python3 -c 'import re,sys; w=sys.argv[1].split(); print(sum(bool(re.fullmatch(r"[A-Za-z,.!]+", x)) for x in w) * 10 // max(len(w), 1))' "$text")
[ "$words" -ge 9 ] || { echo "not English text: $text"; exit 1; }
echo "installed program served: Once upon a time$text"
