#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (what CI runs).
#   scripts/test.sh            build in ./build and run ctest
#   BUILD_DIR=dir scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
start=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"
echo "test suite wall time: $(( $(date +%s) - start )) s"
