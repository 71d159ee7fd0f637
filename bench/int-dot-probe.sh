#!/usr/bin/env bash
# bench/int-dot-probe.sh — is the Q8_0 mat-vec faster on this device with x quantized to
# int8 and packed integer dot products than as linear.comp does it today (int8 weights
# to floats, f32 x)? And a 4-bit one? bench/int_dot_probe/: the same loop one invocation
# per row, and in linear.comp's decode tile (16 rows per 8-lane group, x quantized in the
# kernel), timed with timestamps in interleaved rounds (issue 23 part 3, issue 22's
# Q4_K_M-vs-Q8_0 target; docs/kernels.md, "What to change next").
#   bench/int-dot-probe.sh [ROWS COLS ROUNDS]      (default 4096 4096 15)
# Needs glslc, a C compiler and the Vulkan loader; a device with shaderIntegerDotProduct.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/int-dot-probe
mkdir -p "$out"
for s in dot_f32 dot_i8 dot_q4_i8 tile_f32 tile_i8 tile_q4_f32 tile_q4_i8 tile_q4k_f32; do
  glslc --target-env=vulkan1.3 bench/int_dot_probe/$s.comp -o "$out/$s.spv"
done
cc -O2 -std=c11 bench/int_dot_probe/probe.c -lvulkan -lm -o "$out/probe"
"$out/probe" "$out"/{dot_f32,dot_i8,dot_q4_i8,tile_f32,tile_i8,tile_q4_f32,tile_q4_i8,tile_q4k_f32}.spv "${1:-4096}" "${2:-4096}" "${3:-15}"
