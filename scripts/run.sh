#!/usr/bin/env bash
# Sets up, builds and runs Ember's main job: `ember generate` on a model.
#   scripts/run.sh [MODEL.gguf] [-- extra generate flags]
#   scripts/run.sh --demo [ember-chat flags]     the SDL2 chat demo (docs/ember-chat.md)
#   scripts/run.sh --build-only                  set up and build, run nothing
# The model: the argument, else $EMBER_MODEL, else the best model downloaded with
# scripts/get-model.sh into ~/.cache/ember, else ../shared/models/stories260K, else a
# small random-weight test model made on the spot. It says which.
# It builds what README promises after it: build/ember, build/demo/ember-chat (where
# SDL2 is installed) and both libraries, so that `cmake --install build` works; not the
# tests (scripts/test.sh builds those). EMBER_RUN_BUILD=DIR builds in DIR instead of build
# (tests/test_install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
demo=false build_only=false
if [ "${1:-}" = "--demo" ]; then demo=true; shift; fi
if [ "${1:-}" = "--build-only" ]; then build_only=true; shift; fi
bdir=${EMBER_RUN_BUILD:-build}
bash scripts/setup.sh
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
# Everything `cmake --install` copies, and the demo README runs.
targets=(ember ember_shared ember_static)
# (grep reads to the end: -q would stop the listing early and fail the pipe under pipefail)
if cmake --build "$bdir" --target help | grep -w ember-chat >/dev/null; then targets+=(ember-chat)
else echo "run.sh: ember-chat is not built (it needs SDL2, SDL2_ttf and libcjson: scripts/setup.sh)" >&2; fi
cmake --build "$bdir" -j"$(nproc)" --target "${targets[@]}" >/dev/null
if $build_only; then echo "run.sh: built ${targets[*]} in $bdir" >&2; exit 0; fi

if $demo; then
  model=${EMBER_MODEL:-}   # every argument goes to ember-chat (its -m overrides the model)
else
  model=${1:-${EMBER_MODEL:-}}
  [ $# -gt 0 ] && shift
  [ "${1:-}" = "--" ] && shift
fi
why="given"
cache=${EMBER_CACHE:-$HOME/.cache/ember}
if [ -z "$model" ]; then
  for f in qwen2.5-0.5b-instruct-q8_0.gguf tinyllama-1.1b-chat-v1.0.Q8_0.gguf SmolLM2-135M-Instruct-Q8_0.gguf; do
    if [ -f "$cache/$f" ]; then model="$cache/$f"; why="the best model in $cache"; break; fi
  done
fi
if [ -z "$model" ] && [ -f ../shared/models/stories260K/stories260K-f32.v3.gguf ]; then
  model=../shared/models/stories260K/stories260K-f32.v3.gguf
  why="stories260K from ../shared/models (scripts/get-model.sh fetches bigger ones)"
fi
if [ -z "$model" ]; then
  model=$bdir/test-model.gguf
  why="a random-weight test model: its text is noise (scripts/get-model.sh fetches real ones)"
  "$bdir"/ember make-test-model "$model" --dim 256 --layers 4 --heads 8 --kv-heads 4 --ffn 512 --vocab 1024 --type q8_0
fi
echo "run.sh: model $model ($why)" >&2
if $demo; then
  [ -x "$bdir/demo/ember-chat" ] ||
    { echo "run.sh: ember-chat was not built (it needs SDL2, SDL2_ttf and libcjson: scripts/setup.sh)" >&2; exit 1; }
  echo "run.sh: $bdir/demo/ember-chat -m $model $*" >&2
  exec "$bdir/demo/ember-chat" -m "$model" "$@"
fi
prompt=${EMBER_PROMPT:-"Once upon a time"}
echo "run.sh: $bdir/ember generate -m $model -p \"$prompt\" -n 64 $*" >&2
exec "$bdir/ember" generate -m "$model" -p "$prompt" -n 64 "$@"
