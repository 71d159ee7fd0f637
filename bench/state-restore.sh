#!/usr/bin/env bash
# bench/state-restore.sh — a conversation restored from its KV state against prefilled
# again (issue 26's goal: at least 20x faster for 2,000 tokens), on a made-up model
# (seeded weights; dim 512, 8 layers, 8 heads over 2 KV heads, FFN 1536, a 32k
# vocabulary, Q8_0: about 40M parameters, small enough for lavapipe) or the model given.
#   bench/state-restore.sh [MODEL.gguf] [TOKENS] [RUNS] [vulkan|cpu]
# Needs build/ember and build/libember.a (EMBER_BUILD=DIR for another build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EMBER_BUILD:-$root/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=${1:-}
if [ -z "$model" ]; then
  model=$tmp/restore-bench.gguf
  "$build/ember" make-test-model "$model" --dim 512 --layers 8 --heads 8 --kv-heads 2 --ffn 1536 --vocab 32000 \
    --ctx 4096 --type q8_0 >/dev/null
fi
cc -O2 -std=c11 -o "$tmp/restore_bench" "$root/bench/state_restore/restore_bench.c" -I"$root/include" \
  "$build/libember.a" $(pkg-config --libs vulkan) -lpthread -lm -ldl
"$tmp/restore_bench" "$model" "${2:-2000}" "${3:-5}" "${4:-vulkan}"
