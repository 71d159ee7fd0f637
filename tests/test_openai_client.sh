#!/usr/bin/env bash
# test_openai_client.sh — OpenAI's official client library (the `openai` npm package, v4)
# drives `ember serve`: models.list, chat and legacy completions, streamed and not,
# embeddings (the client's own base64 decoding, and base64 asked for), vLLM's
# truncate_prompt_tokens passed as an extra body field (usage.prompt_tokens is what was
# kept), and the errors a client must see as its own exception classes (401, 404, 400,
# context_length_exceeded for a prompt longer than the context). The checks
# are tests/openai_client/check.mjs; then tests/openai_client/check_lost.mjs against a
# second server whose GPU is lost mid-reply (EMBER_FAULTS): the stream raises APIError
# device_lost after some text, the next request 503; then check_tools.mjs against a third
# (a random model with a 4096-token context): the structured-output and tool-calling
# helpers (beta.chat.completions.parse, .stream with tools). The package is installed once into
# $EMBER_BUILD_DIR/npm (ignored by git) and reused; without npm, or without the npm
# registry, the test skips. The model is stories260K when ../shared has it (real text),
# else a small random test model.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_fixture.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=${EMBER_TEST_TMP:-/tmp}/openai_client
build=${EMBER_BUILD_DIR:?EMBER_BUILD_DIR is not set (run through ctest)}
npm_dir=$build/npm
rm -rf "$tmp"
mkdir -p "$tmp"

server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# ---- the client library -----------------------------------------------------------------
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are not installed (apt-get install npm)"; exit 77
fi
have_openai() { NODE_PATH=$npm_dir/node_modules node -e "require('openai')" 2>/dev/null; }
if ! have_openai; then
  mkdir -p "$npm_dir"
  if ! timeout 90 npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error openai@4 >"$tmp/npm.log" 2>&1 ||
     ! have_openai; then
    sed 's/^/  npm: /' "$tmp/npm.log" | tail -n 20
    echo "SKIP: could not install the openai npm package (no access to the npm registry?)"; exit 77
  fi
fi
echo "openai $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$npm_dir/node_modules/openai/package.json"), node $(node --version)"

# ---- the server ---------------------------------------------------------------------------
model=${EMBER_SHARED:-/nonexistent}/models/stories260K/stories260K-f32.v3.gguf
if [ ! -f "$model" ]; then
  model=$tmp/oai.gguf
  "$EMBER_BIN" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 \
    --ctx 256 >/dev/null
fi
model_id=$(basename "$model" .gguf)  # the id ember serve gives without --model-name
dim=$("$EMBER_BIN" info -m "$model" --json | sed -n 's/.*"dim": \([0-9]*\).*/\1/p')  # its embeddings' size
echo "model $model_id ($model, dim $dim)"

"$EMBER_BIN" serve -m "$model" --port 0 --api-key sk-test >"$tmp/serve.out" 2>"$tmp/serve.err" &
server_pid=$!

port=$(serve_port "$server_pid" "$tmp/serve.err") || { echo "$port"; exit 1; }
echo "server on port $port"

# ---- the client's checks ------------------------------------------------------------------
rc=0
NODE_PATH=$npm_dir/node_modules timeout 120 node "$here/openai_client/check.mjs" \
  "http://127.0.0.1:$port/v1" sk-test "$model_id" "$dim" || rc=$?
[ "$rc" -eq 124 ] && echo "FAIL: the client's checks took over 120 s"

# ---- a second server whose GPU is lost mid-reply (EMBER_FAULTS): the client raises --------
EMBER_FAULTS=submit_lost=30 "$EMBER_BIN" serve -m "$model" --port 0 --api-key sk-test \
  >"$tmp/lost.out" 2>"$tmp/lost.err" &
lost_pid=$!
if lost_port=$(serve_port "$lost_pid" "$tmp/lost.err"); then
  NODE_PATH=$npm_dir/node_modules timeout 60 node "$here/openai_client/check_lost.mjs" \
    "http://127.0.0.1:$lost_port/v1" sk-test "$model_id" || rc=1
else
  echo "$lost_port"; rc=1
fi
kill -KILL "$lost_pid" 2>/dev/null || true
wait "$lost_pid" 2>/dev/null || true

# ---- a third server, with room for tools in its prompts: the structured-output and ---------
# ---- tool-calling helpers (check_tools.mjs) ------------------------------------------------
tools_model=$tmp/tools.gguf
"$EMBER_BIN" make-test-model "$tools_model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 \
  --ctx 4096 >/dev/null
"$EMBER_BIN" serve -m "$tools_model" --port 0 --api-key sk-test >"$tmp/tools.out" 2>"$tmp/tools.err" &
tools_pid=$!
if tools_port=$(serve_port "$tools_pid" "$tmp/tools.err"); then
  NODE_PATH=$npm_dir/node_modules timeout 120 node "$here/openai_client/check_tools.mjs" \
    "http://127.0.0.1:$tools_port/v1" sk-test tools || rc=1
else
  echo "$tools_port"; rc=1
fi
kill -TERM "$tools_pid" 2>/dev/null || true
wait "$tools_pid" 2>/dev/null || true

# ---- stop: SIGTERM, exit 0 (which also says the validation layer was silent) -------------
kill -TERM "$server_pid"
for _ in $(seq 150); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL: ember serve still runs 15 s after SIGTERM"; rc=1
else
  src=0
  wait "$server_pid" || src=$?
  server_pid=
  if [ "$src" -eq 0 ]; then
    echo "ok   ember serve exits 0 on SIGTERM"
  else
    echo "FAIL: ember serve exited $src on SIGTERM"; sed 's/^/  serve: /' "$tmp/serve.err"; rc=1
  fi
fi
exit "$rc"
