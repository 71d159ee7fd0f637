#!/usr/bin/env bash
# examples/game_loop.c: a game's frame loop (SDL2 window under Xvfb, its own Vulkan device
# and swapchain) hands its device to Ember and generates NPC lines between frames. Each
# mode must exit 0, draw frames, generate tokens and keep the validation layer silent
# (the game's messenger sees Ember's calls on the shared device too).
set -uo pipefail
if [ -z "${EMBER_GAME_LOOP_EXAMPLE:-}" ]; then
  echo "SKIP: examples/game_loop.c was not built (SDL2 not found by CMake)"; exit 77
fi
if ! command -v Xvfb >/dev/null; then
  echo "SKIP: Xvfb not installed (apt-get install xvfb)"; exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/xvfb_fixture.sh"
trap xvfb_stop EXIT
xvfb_start || { echo "FAIL: Xvfb did not start"; exit 1; }
tmp=${EMBER_TEST_TMP:-/tmp}
model=$tmp/game_loop_model.gguf
"$EMBER_BIN" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 128 || exit 1

passed=0 failed=0
# check NAME FLAGS...: one run of the example on the private X server.
check() {
  local name=$1; shift
  local out rc
  out=$("$EMBER_GAME_LOOP_EXAMPLE" -m "$model" --validation \
        --requests 3 -n 16 --min-frames 30 --max-seconds 120 "$@" 2>&1)
  rc=$?
  echo "$out" | sed "s/^/  [$name] /"
  # frames 30  frame_ms p50 16.7 p90 16.8 p99 17.0 max 20.1  tokens 48  tok_s 91.2  validation 0
  local re='^frames ([0-9]+)  frame_ms p50 ([0-9.]+) p90 ([0-9.]+) p99 ([0-9.]+) max ([0-9.]+)  tokens ([0-9]+)  tok_s ([0-9.]+)  validation ([0-9]+)$'
  local line
  line=$(grep -E "$re" <<<"$out" | tail -n 1)
  # the merchant's reply follows its schema: JSON with an action of the list and a short line
  local merchant
  merchant=$(grep -E '^\[merchant\] ' <<<"$out" | head -n 1 | sed -E 's/^\[merchant\] //; s/ \([0-9]+ tokens, first after [0-9]+ ms, grammar\)$//')
  python3 -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(0 if set(d) == {"action", "line"} and
d["action"] in ("trade", "haggle", "refuse") and 1 <= len(d["line"]) <= 24 else 1)' "$merchant" 2>/dev/null
  local structured=$?
  if [ "$rc" -eq 0 ] && [[ $line =~ $re ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] && [ "${BASH_REMATCH[6]}" -gt 0 ] &&
     [ "${BASH_REMATCH[8]}" -eq 0 ] && [ "$structured" -eq 0 ]; then
    echo "ok   $name: frames ${BASH_REMATCH[1]}, frame_ms p50 ${BASH_REMATCH[2]} p99 ${BASH_REMATCH[4]} max ${BASH_REMATCH[5]}, tokens ${BASH_REMATCH[6]}, tok_s ${BASH_REMATCH[7]}, validation ${BASH_REMATCH[8]}"
    passed=$((passed + 1))
  else
    echo "FAIL $name: exit $rc, summary '${line:-none}', merchant '$merchant' (want exit 0, frames > 0, tokens > 0, validation 0, the merchant's JSON ended by its grammar)"
    failed=$((failed + 1))
  fi
}

check shared-run_for --budget-ms 4  # the default: the game's device, a frame budget
check shared-blocking --blocking    # the game's device, one ember_engine_step per frame
check own-device --own-device       # Ember's own instance and device beside the game's
echo "test_game_loop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
