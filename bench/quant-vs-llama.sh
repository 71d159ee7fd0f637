#!/usr/bin/env bash
# quant-vs-llama.sh — `ember quantize [--pure] IN OUT NAME` against llama.cpp's own
# quantizer (llama_model_quantize, from the prebuilt libllama of npm node-llama-cpp) on the
# same input, for every name Ember takes, with llama.cpp's per-tensor rules (plain
# `llama-quantize IN OUT NAME`) and with --pure: tensor by tensor the same types and bytes,
# and the same metadata, general.file_type included (docs/quantization.md). Which file type
# a name means is read from llama.cpp's own quantize.cpp, not from Ember.
# Needs the npm registry, or LLAMA_CPP_DIR: a folder with what would be fetched, unpacked
# (bins/package/bins/linux-x64/*.so and src/, llama.cpp's source at that release; see
# bench/llama_cpp.sh). Not part of the test suite.
#   [QUANT_NAMES="q4_k_m ..."] bench/quant-vs-llama.sh [IN.gguf ...]
# QUANT_NAMES: only those names (default: every name `ember quantize --help` lists).
# Without IN, three inputs on which the rules matter:
#   - rules: make-test-model, 16 layers (use_more_bits depends on the layer), 8 heads and
#     2 KV heads (GQA 4), dim 256 and FFN 512 (rows of whole K blocks), F32;
#   - tied: make-test-model --tied (token_embd takes the output's rule), 8 layers, GQA 1,
#     FFN 320 (ffn_down's rows are not whole K blocks: the rules' types fall back), F32;
#   - moe: make-test-model --arch mixtral, 16 layers, 8 experts (llama.cpp's rules for 8
#     experts: attn_k, attn_v, attn_output), dim 256, expert FFN 512, F32: 3-D expert tensors;
#   - qwen3moe: 16 experts (ffn_down_exps by the layer in its name), dim 256, expert FFN 256;
#   - stories260K F32 (dim 64, FFN 172: every K type falls back), when ../shared has it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/bench/quant_vs_llama
ember=${EMBER_BIN:-$root/build/ember}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/bench/llama_cpp.sh"
llama_cpp_fetch "$tmp"
llama_cpp_cc cpu "$tmp/llama_quantize" "$here/llama_quantize.c"
echo "llama.cpp $llama_version"

labels=() inputs=()
if [ $# -gt 0 ]; then
  for f in "$@"; do labels+=("$(basename "$f")") inputs+=("$f"); done
else
  "$ember" make-test-model "$tmp/rules.gguf" --dim 256 --layers 16 --heads 8 --kv-heads 2 --ffn 512 --vocab 512 \
    --type f32 --seed 7 >/dev/null
  "$ember" make-test-model "$tmp/tied.gguf" --dim 256 --layers 8 --heads 4 --kv-heads 4 --ffn 320 --vocab 512 \
    --tied --type f32 --seed 7 >/dev/null
  "$ember" make-test-model "$tmp/moe.gguf" --arch mixtral --dim 256 --layers 16 --heads 8 --kv-heads 2 --ffn 512 \
    --vocab 512 --type f32 --seed 7 >/dev/null
  "$ember" make-test-model "$tmp/qwen3moe.gguf" --arch qwen3moe --dim 256 --layers 16 --heads 8 --kv-heads 2 \
    --head-dim 32 --ffn 512 --experts 16 --experts-used 4 --expert-ffn 256 --vocab 512 --type f32 --seed 7 >/dev/null
  labels+=("make-test-model, 16 layers, GQA 4 (8/2 heads), dim 256, FFN 512, F32") inputs+=("$tmp/rules.gguf")
  labels+=("make-test-model --arch mixtral, 16 layers, 8 experts of FFN 512, dim 256, F32") inputs+=("$tmp/moe.gguf")
  labels+=("make-test-model --arch qwen3moe, 16 layers, 16 experts of FFN 256, dim 256, F32")
  inputs+=("$tmp/qwen3moe.gguf")
  labels+=("make-test-model --tied, 8 layers, GQA 1, dim 256, FFN 320, F32") inputs+=("$tmp/tied.gguf")
  stories=${EMBER_SHARED:-$root/../shared}/models/stories260K/stories260K-f32.v3.gguf
  if [ -f "$stories" ]; then
    labels+=("stories260K F32 (5 layers, GQA 2, dim 64, FFN 172: K types fall back)") inputs+=("$stories")
  else
    echo "note: $stories not there; stories260K not compared"
  fi
fi

names=${QUANT_NAMES:-$("$ember" quantize --help | sed -n 's/^  NAME: //p' | tr -d ',')}
fail=0 summary=()
for k in "${!inputs[@]}"; do
  in=${inputs[$k]} runs=0 differing=0 tensors=
  echo "== ${labels[$k]}"
  for name in $names; do
    ftype=$(python3 "$here/compare.py" --llama-ftype "$llama/src" "$name") ||
      { echo "$name: llama-quantize takes no such name"; fail=1; continue; }
    for mode in rules pure; do
      flag=()
      [ $mode = pure ] && flag=(--pure)
      "$ember" quantize "${flag[@]}" "$in" "$tmp/ember.gguf" "$name"
      "$tmp/llama_quantize" "$in" "$tmp/llama.gguf" "$ftype" $mode >"$tmp/llama.log" 2>&1 ||
        { echo "$name $mode: llama.cpp failed"; tail -3 "$tmp/llama.log"; fail=1; continue; }
      printf '%-7s %-5s (file type %2s): ' "$name" "$mode" "$ftype"
      out=$(python3 "$here/compare.py" "$tmp/ember.gguf" "$tmp/llama.gguf") || fail=1
      echo "$out"
      read -r tensors _ _ _ bad _ <<<"$(echo "$out" | tail -1)"  # "N tensors, K keys, D differ"
      differing=$((differing + bad)) runs=$((runs + 1))
    done
  done
  summary+=("| ${labels[$k]} | $(echo $names | wc -w) names, rules and --pure ($runs files) | $tensors each | $differing |")
done
echo
echo "| input | names | tensors | differing |"
echo "|---|---|---|---|"
printf '%s\n' "${summary[@]}"
echo "($(date +%Y-%m-%d), llama.cpp $(git -C "$llama/src" log -1 --format=%h))"
exit $fail
