#!/usr/bin/env bash
# arch-vs-llama.sh — Ember's perplexity on a random-weight model of each family that
# `ember make-test-model --arch NAME` writes, against llama.cpp's on the same file (issue
# 41, item 5; docs/models.md). For each family of the list below and each seed, an F32
# model (`make-test-model --arch NAME --type f32 --seed S`, the shape below) and a random
# token sequence (BOS, then ids in 3..vocab-1 drawn with the same seed) are run by
#   llama.cpp, CPU backend: the reference. One batch, n_ctx = the number of tokens, KV
#       cache F32, flash attention off (bench/logprobs_vs_llama/llama_logprobs.c)
#   Ember, Vulkan backend, and Ember, CPU backend (--backend cpu), through the public API
#       (bench/logprobs_vs_llama/ember_logprobs.c)
# and the table gives the perplexities (exp of the mean -log p of tokens 1..n-1, in
# double), Ember's relative differences from llama.cpp and, for information, the largest
# |delta log p| over the tokens. Exit 1 when a |relative difference| is over 1e-3, or a
# family cannot be made, loaded or run by either side.
# Then, at seed 1, each feature of the ablation list switched off in Ember's CPU reference
# (bench/arch_vs_llama/ember_ablate.c: gemma2 without its soft-caps, gemma2 without its
# window, qwen3 without QK-norm, smollm3 rotating on every layer, qwen3moe running one
# expert a token, mixtral without renormalising its two experts' weights, gpt-oss without
# its attention sinks or with the plain SwiGLU for its clamped one): each must be off
# llama.cpp by more than 1e-3, or the comparison would not catch the feature missing
# (exit 1 too).
# llama.cpp: the prebuilt CPU libraries of npm @node-llama-cpp/linux-x64 and llama.cpp's
# source at that release (headers; the git bundle inside node-llama-cpp), fetched with npm,
# or LLAMA_CPP_DIR: a folder with them unpacked (src/ and bins/package/bins/linux-x64/):
# see bench/llama_cpp.sh.
# Ember: build/ember and build/libember.a (EMBER_BUILD=DIR for another build); its Vulkan
# device: EMBER_DEVICE. Not part of the test suite (network); tests/test_arch_vs_llama.sh
# runs it with --tokens 64.
# With --type T (q4_k_m, mxfp4_moe, any name make-test-model takes) the models are made of
# that type and Ember runs them as they are, while llama.cpp runs the same weights
# dequantized to F32 (`ember quantize M.gguf M-f32.gguf f32`): its CPU backend quantizes
# the activations for a quantized weight's products (Q8_0, Q8_K), Ember does not, so only
# the weights are shared and the comparison stays at the 1e-3 of the F32 one.
#   bench/arch-vs-llama.sh [--tokens N] [--seeds "S ..."] [--type T] [FAMILY ...]
# FAMILY: a name of tests/data/families.txt (default: all of it), or a quoted line
# ("NAME OPTIONS...", as in that file) to try a family not in it yet; N: tokens per sequence (128, at most the
# context, 256); seeds: 1 2. Time: a few seconds a row on 2 cores (Ember's per-token
# values come from N prefix scores: N^2/2 token rows).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lp=$root/bench/logprobs_vs_llama
helper=$root/bench/arch_vs_llama/arch_vs_llama.py
build=${EMBER_BUILD:-$root/build}
ember=$build/ember

# The families: tests/data/families.txt, a line each, its name first (the row's name, and
# --arch NAME unless the line gives --arch itself), then make-test-model options of its
# own, which come after the shared shape and so override it (a head size, sliding
# windows, soft-caps: --key). Adding a family is adding its line there.
mapfile -t families < <(grep -v '^\s*#' "$root/tests/data/families.txt" | grep -v '^\s*$' | tr -s ' ')
# The shared shape: GQA (8 query heads on 2 KV heads, heads of 16 where a family's
# --head-dim does not say otherwise), a context that holds the tokens.
shape=(--dim 128 --layers 2 --heads 8 --kv-heads 2 --ffn 256 --vocab 512 --ctx 256)
tol=1e-3
# Features switched off in Ember (FAMILY:FEATURE, ember_ablate.c): must fail at seed 1.
ablations=(gemma2:softcap gemma2:window qwen3:qk-norm smollm3:nope qwen3moe:top1 mixtral:expert-norm gpt-oss:sinks
           gpt-oss:oai-swiglu)

n_tokens=128 seeds="1 2" type=f32
while [ $# -gt 0 ]; do
  case $1 in
    --tokens) n_tokens=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "arch-vs-llama.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
rows=()
if [ $# -eq 0 ]; then
  rows=("${families[@]}")
else
  for want in "$@"; do # a name of the list: its line; else the argument as a line of its own
    line=$want
    for f in "${families[@]}"; do [ "${f%% *}" = "$want" ] && line=$f; done
    rows+=("$line")
  done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
: >"$tmp/devices.log"

. "$root/bench/llama_cpp.sh"
llama_cpp_fetch "$tmp"
llama_cpp_cc cpu "$tmp/llama_logprobs" "$lp/llama_logprobs.c" -lm
cc -O2 -std=c11 -o "$tmp/ember_logprobs" "$lp/ember_logprobs.c" -I"$root/include" "$build/libember.a" \
  $(pkg-config --libs vulkan) -lpthread -lm -ldl
cc -O2 -std=c11 -o "$tmp/ember_ablate" "$root/bench/arch_vs_llama/ember_ablate.c" -I"$root" -I"$root/include" "$build/libember.a" \
  -lpthread -lm -ldl
echo "llama.cpp $llama_version (npm node-llama-cpp $version)"

done_rows=() status=0
for line in "${rows[@]}"; do
  read -r name opts <<<"$line"
  case " $opts " in *" --arch "*) arch=() ;; *) arch=(--arch "$name") ;; esac
  for seed in $seeds; do
    o=$tmp/$name-$seed log=$tmp/$name-$seed.log
    # shellcheck disable=SC2206 # $opts: the family's options, split into words
    make=("${arch[@]}" "${shape[@]}" $opts --type "$type" --seed "$seed")
    echo "$name, seed $seed: make-test-model ${make[*]}"
    ref=$o.gguf
    [ "$type" = f32 ] || ref=$o-f32.gguf
    if "$ember" make-test-model "$o.gguf" "${make[@]}" >"$log" 2>&1 &&
      { [ "$type" = f32 ] || "$ember" quantize "$o.gguf" "$ref" f32 >>"$log" 2>&1; } &&
      python3 "$helper" tokens "$o.gguf" "$n_tokens" "$seed" >"$o.tokens" 2>>"$log" &&
      "$tmp/llama_logprobs" "$cpulib" "$ref" "$o.tokens" "$o.lc" 2 2>>"$log" &&
      "$tmp/ember_logprobs" "$o.gguf" vulkan "$o.tokens" "$o.ev" 2>>"$log" &&
      "$tmp/ember_logprobs" "$o.gguf" cpu "$o.tokens" "$o.ec" 2>>"$log"; then
      cat "$log" >>"$tmp/devices.log"
    else
      echo "  failed:"; grep -v '^load_backend:' "$log" | tail -n 5 | sed 's/^/  /'
      status=1
    fi
    done_rows+=("$name:$seed")
  done
done
ablated=()
for a in "${ablations[@]}"; do
  name=${a%%:*} feature=${a#*:} o=$tmp/${a%%:*}-1
  [ -f "$o.lc" ] || continue # the family was not run
  if "$tmp/ember_ablate" "$o.gguf" "$feature" "$o.tokens" "$o.ab-$feature" 2>>"$tmp/$name-1.log"; then
    ablated+=("$a")
  else
    echo "$a: ember_ablate failed"; status=1
  fi
done
echo
echo "Devices: Ember Vulkan: $(sed -n 's/^.* on \(.*\): [0-9]* tokens$/\1/p' "$tmp/devices.log" | grep -vx cpu |
  sort -u | paste -sd, -); llama.cpp CPU: $(sed -n 's|^load_backend: loaded CPU backend from .*/||p' "$tmp/devices.log" |
  sort -u | paste -sd, -)"
echo "Models: make-test-model --arch FAMILY ${shape[*]} --type $type --seed S (and a family's own options);" \
  "$n_tokens tokens (BOS, then random ids in 3..vocab-1, seed S)$([ "$type" = f32 ] ||
    echo "; llama.cpp on the weights dequantized to F32")"
echo
python3 "$helper" table "$tmp" "$tol" "${done_rows[@]}" || status=1
if [ ${#ablated[@]} -gt 0 ]; then
  echo
  python3 "$helper" ablations "$tmp" "$tol" "${ablated[@]}" || status=1
fi
echo "($(date +%Y-%m-%d), llama.cpp $llama_version, npm node-llama-cpp $version, $(($(date +%s) - t0)) s)"
exit $status
