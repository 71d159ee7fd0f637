#!/usr/bin/env bash
# quant-vs-llama.sh — `ember quantize IN OUT TYPE` against llama.cpp's own quantizer
# (llama_model_quantize with --pure, from the prebuilt libllama of npm node-llama-cpp) on
# the same input, for every type Ember writes: tensor by tensor, the same types and the
# same bytes (docs/quantization.md). Needs the npm registry; not part of the test suite.
#   bench/quant-vs-llama.sh [IN.gguf]
# Without IN, a make-test-model file whose rows fit every block (dim 256) plus one
# matrix whose rows do not (ffn 320: K types fall back), F32.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/bench/quant_vs_llama
ember=${EMBER_BIN:-$root/build/ember}
version=3.21.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "llama.cpp from npm node-llama-cpp@$version ..."
(cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$version" "node-llama-cpp@$version" >/dev/null &&
  mkdir bins main && tar xzf node-llama-cpp-linux-x64-*.tgz -C bins && tar xzf "node-llama-cpp-$version.tgz" -C main &&
  git clone -q main/package/llama/gitRelease.bundle src 2>/dev/null)
lib=$tmp/bins/package/bins/linux-x64
cc -O1 -o "$tmp/llama_quantize" "$here/llama_quantize.c" -I"$tmp/src/include" -I"$tmp/src/ggml/include" \
  -L"$lib" -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,"$lib"
echo "llama.cpp $(git -C "$tmp/src" log -1 --format='%h %cd' --date=short)"
in=${1:-$tmp/in.gguf}
[ -n "${1:-}" ] || "$ember" make-test-model "$in" --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 320 --vocab 512 \
  --type f32 --seed 7 >/dev/null
fail=0
for t in $("$ember" quantize --help | sed -n 's/^  TYPE: //p' | tr -d ','); do
  "$ember" quantize "$in" "$tmp/ember.gguf" "$t"
  ftype=$(python3 "$here/compare.py" --file-type "$tmp/ember.gguf")
  "$tmp/llama_quantize" "$in" "$tmp/llama.gguf" "$ftype" >/dev/null 2>&1 || { echo "$t: llama.cpp failed"; fail=1; continue; }
  printf '%-7s (file type %2s): ' "$t" "$ftype"
  python3 "$here/compare.py" "$tmp/ember.gguf" "$tmp/llama.gguf" || fail=1
done
exit $fail
