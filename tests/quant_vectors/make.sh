#!/usr/bin/env bash
# make.sh — remakes tests/data/quant/ref.txt (the quantization reference hashes) with
# llama.cpp's libggml-base from npm node-llama-cpp (the prebuilt CPU library; the headers
# are not needed, gen.c declares what it calls). Not run by the test suite: its output is
# committed, and test_quant_types reads it.
#   tests/quant_vectors/make.sh [OUT_DIR]      (default tests/data/quant)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../data/quant}
version=3.21.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$version" >/dev/null && tar xzf ./*.tgz)
lib=$tmp/package/bins/linux-x64
cc -O1 -o "$tmp/gen" "$here/gen.c" "$here/input.c" -L"$lib" -l:libggml-base.so -lm -Wl,-rpath,"$lib"
mkdir -p "$out"
"$tmp/gen" "$out"
echo "made $out/ref.txt with libggml-base of @node-llama-cpp/linux-x64@$version"
