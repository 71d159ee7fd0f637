#!/usr/bin/env bash
# bench/subgroup-probe.sh — what the Vulkan device's subgroups really do, against what it
# reports (bench/subgroup_probe/probe.c; docs/portability.md, "lavapipe").
#   bench/subgroup-probe.sh [WIDTH...]   on lavapipe, once per LP_NATIVE_VECTOR_WIDTH
#                                        (default: 128 256 512 1024 2048)
# Needs build/ (cmake --build build) for libember.a, and glslc. On another device the
# variable changes nothing: one run says what that device does.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/subgroup-probe
mkdir -p "$out"
glslc --target-env=vulkan1.2 -fshader-stage=compute bench/subgroup_probe/probe.comp -o "$out/probe.spv"
cc -O1 -std=c11 -D_GNU_SOURCE -I. -Itests -Iinclude -Ibuild/shaders bench/subgroup_probe/probe.c \
  tests/kernel_fixture.c tests/testutil.c build/libember.a -lvulkan -lm -lpthread -ldl -o "$out/probe"
for w in "${@:-128 256 512 1024 2048}"; do
  for width in $w; do
    echo "LP_NATIVE_VECTOR_WIDTH=$width:"
    LP_NATIVE_VECTOR_WIDTH=$width "$out/probe" "$out/probe.spv"
  done
done
