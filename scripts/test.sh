#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (what CI runs).
#   scripts/test.sh            build in ./build and run ctest
#   BUILD_DIR=dir scripts/test.sh
# With no arguments, the Windows build's tests then run under Wine (scripts/test-windows.sh)
# but for the numerical ones below, whose code and SPIR-V are the same on both systems and
# run on the same driver, so Wine has nothing to add to them (docs/portability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
start=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"
echo "test suite wall time: $(( $(date +%s) - start )) s"
if [ $# -eq 0 ]; then
  start=$(date +%s)
  numerical='^test_(kernels|kernel_attention|kernel_topk|forward|forward_arch|kv_types|logprobs|reference_types|quant_rules|sampler|swa)$'
  NATIVE_BUILD_DIR=$BUILD_DIR bash scripts/test-windows.sh -E "$numerical"
  echo "windows leg wall time (build, Wine, tests): $(( $(date +%s) - start )) s"
fi
