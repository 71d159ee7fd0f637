#!/usr/bin/env bash
# Sets up, builds and runs Ember's main job: `ember generate` on a model.
#   scripts/run.sh [MODEL.gguf] [-- extra generate flags]
# Without a model it uses EMBER_MODEL, else ../shared/models/stories260K, else it makes a
# small random test model (and says so).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target ember >/dev/null

model=${1:-${EMBER_MODEL:-}}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
prompt="Once upon a time"
if [ -z "$model" ] && [ -f ../shared/models/stories260K/stories260K-f32.v3.gguf ]; then
  model=../shared/models/stories260K/stories260K-f32.v3.gguf
  echo "run.sh: using the stories260K model from ../shared/models" >&2
fi
if [ -z "$model" ]; then
  model=build/test-model.gguf
  echo "run.sh: no model given: making a random-weight test model ($model); its text is noise" >&2
  build/ember make-test-model "$model" --dim 256 --layers 4 --heads 8 --kv-heads 4 --ffn 512 --vocab 1024 --type q8_0
fi
echo "run.sh: ember generate -m $model -p \"$prompt\" -n 64" >&2
exec build/ember generate -m "$model" -p "$prompt" -n 64 "$@"
