#!/usr/bin/env bash
# test_arch_vs_llama.sh — Ember's perplexity on a random F32 model of every family of
# tests/data/families.txt, at seeds 1 and 2, on the Vulkan and the CPU backend, against
# llama.cpp's CPU backend (npm node-llama-cpp's libllama; KV cache F32, flash attention
# off) on the same file and tokens: within 1e-3 (relative) everywhere, and with soft-caps,
# a window, QK-norm or NoPE switched off in Ember off by more than that, or the test
# fails (issue 41, item 5). It runs the bench script with 64 tokens a sequence; the
# checks are the script's (bench/arch_vs_llama/arch_vs_llama.py), on numbers, not times.
# llama.cpp: LLAMA_CPP_DIR when set (bench/llama_cpp.sh), else fetched once with npm
# into $EMBER_BUILD_DIR/llama-cpp (ignored by git) and reused; without npm, or when the
# download fails (no access to the npm registry), the test skips. It needs the build's
# libember.a (the ember_static target) and a C compiler.
set -euo pipefail
src=${EMBER_SOURCE_DIR:?EMBER_SOURCE_DIR is not set (run through ctest)}
build=${EMBER_BUILD_DIR:?EMBER_BUILD_DIR is not set (run through ctest)}
[ -f "$build/libember.a" ] || { echo "FAIL: $build/libember.a is missing (build the ember_static target)"; exit 1; }

have_llama() { [ -f "$1/src/include/llama.h" ] && [ -f "$1/bins/package/bins/linux-x64/libllama.v0.4.0.so" ]; }
if [ -z "${LLAMA_CPP_DIR:-}" ]; then
  cache=$build/llama-cpp
  if ! have_llama "$cache"; then
    command -v npm >/dev/null || { echo "SKIP: npm is not installed (apt-get install npm): no llama.cpp to compare with"; exit 77; }
    part=$build/llama-cpp.part
    rm -rf "$part" "$cache"
    mkdir -p "$part"
    # llama_cpp_fetch's npm pack and git clone into $part/llama; what came is checked after
    timeout 300 bash -c '. "$1"; llama_cpp_fetch "$2"' _ "$src/bench/llama_cpp.sh" "$part" >"$part.log" 2>&1 || true
    if ! have_llama "$part/llama"; then
      sed 's/^/  npm: /' "$part.log" | tail -n 20
      rm -rf "$part" "$part.log"
      echo "SKIP: could not fetch llama.cpp with npm (node-llama-cpp 3.21.1; no access to the npm registry?)"; exit 77
    fi
    rm -rf "$part/llama/main" "$part"/llama/*.tgz  # the headers (src/) and libraries (bins/) stay
    mv "$part/llama" "$cache"
    rm -rf "$part" "$part.log"
  fi
  export LLAMA_CPP_DIR=$cache
fi

rc=0
out=$(EMBER_BUILD=$build bash "$src/bench/arch-vs-llama.sh" --tokens 64 --seeds "1 2" 2>&1) || rc=$?
echo "$out"
rows=$(grep -c '^| [^ |]* | [12] | [0-9]' <<<"$out" || true)  # a table row with llama.cpp's number
families=$(grep -cv '^\s*#\|^\s*$' "$src/tests/data/families.txt")
if [ "$rc" -ne 0 ] || [ "$rows" -ne $((2 * families)) ] || ! grep -q "on both backends: every row$" <<<"$out"; then
  echo "FAIL: Ember's perplexity is not within 1e-3 of llama.cpp's on every family and seed (exit $rc, $rows rows of $((2 * families)))"
  exit 1
fi
if ! grep -q "more than 0.001: every one$" <<<"$out" || [ "$(grep -c '| yes |$' <<<"$out")" -ne 4 ]; then
  echo "FAIL: a feature switched off in Ember (soft-caps, window, QK-norm, NoPE) was not caught by the comparison"
  exit 1
fi
echo "PASS"
