#!/usr/bin/env bash
# logprobs-vs-llama.sh — Ember's per-token log-probabilities on llama.cpp's own quantized
# files, against llama.cpp's forward pass (issue 22, part 6; docs/quantization.md).
# A random F32 model (make-test-model: llama architecture, which llama.cpp loads too) is
# quantized by llama.cpp's llama_model_quantize (what plain `llama-quantize IN OUT NAME`
# runs: the presets' per-tensor rules) to each NAME; on one random token sequence (BOS
# first) every file is run by
#   EV  Ember, Vulkan backend           EC  Ember, CPU backend (--backend cpu, the oracle)
#   LV  llama.cpp, Vulkan backend, one token per llama_decode: the mat-vec kernels, which
#       read F32 activations (integer dot products off: GGML_VK_DISABLE_INTEGER_DOT_PRODUCT,
#       so no Q8_1 activations); KV cache F32, no flash attention. The reference.
#   LC  llama.cpp, CPU backend, one batch: activations quantized for quantized dot
#       products (Q8_0/Q8_K; BF16 for BF16), different by design. For reference.
#   LVB llama.cpp, Vulkan backend, one batch: the mat-mat kernels, whose tiles hold F16
#       on a device with fp16 (lavapipe has it), and which convert a non-contiguous
#       right-hand side (attention's Q and softmax rows) to F16. For reference.
# and the table gives max |delta log p| over the tokens and the perplexities (exp of the
# mean -log p). Exit 1 when EV or EC is off LV by more than 1e-3 in a log p or 1 % in
# perplexity.
# llama.cpp: the prebuilt libraries of npm node-llama-cpp (@node-llama-cpp/linux-x64 for
# quantizing and LC, @node-llama-cpp/linux-x64-vulkan for LV and LVB) and llama.cpp's
# source at that release (headers; the git bundle inside node-llama-cpp), fetched with npm,
# or LLAMA_CPP_DIR: a folder with them unpacked (src/, bins/package/bins/linux-x64/ and
# vulkan/package/bins/linux-x64-vulkan/; the last one is fetched when missing): see
# bench/llama_cpp.sh.
# Ember: build/ember and build/libember.a (EMBER_BUILD=DIR for another build).
# llama.cpp's Vulkan device: GGML_VK_VISIBLE_DEVICES (default 0, lavapipe here; both
# device names are printed). Not part of the test suite (network).
#   bench/logprobs-vs-llama.sh [--tokens N] [NAME ...]
# NAME: llama-quantize's names (default: q4_k_m q5_k_m q6_k q4_0 iq4_xs bf16 q8_0); the F32
# input itself is always the first row. Time: about a minute per file on 2 cores (Ember's
# per-token values come from N prefix scores through the public API: N^2/2 rows).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/bench/logprobs_vs_llama
build=${EMBER_BUILD:-$root/build}
ember=$build/ember
n_tokens=128
if [ "${1:-}" = --tokens ]; then n_tokens=$2; shift 2; fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(q4_k_m q5_k_m q6_k q4_0 iq4_xs bf16 q8_0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

. "$root/bench/llama_cpp.sh"
llama_cpp_fetch "$tmp" vulkan
llama_cpp_cc cpu "$tmp/llama_quantize" "$root/bench/quant_vs_llama/llama_quantize.c"
llama_cpp_cc cpu "$tmp/llama_logprobs_cpu" "$here/llama_logprobs.c" -lm
llama_cpp_cc vulkan "$tmp/llama_logprobs_vulkan" "$here/llama_logprobs.c" -lm
cc -O2 -std=c11 -o "$tmp/ember_logprobs" "$here/ember_logprobs.c" -I"$root/include" "$build/libember.a" \
  $(pkg-config --libs vulkan) -lpthread -lm -ldl
echo "llama.cpp $llama_version (npm node-llama-cpp $version)"

"$ember" make-test-model "$tmp/f32.gguf" --dim 256 --layers 4 --heads 8 --kv-heads 2 --ffn 512 --vocab 512 --ctx 256 \
  --type f32 --seed 1 >/dev/null
# N ids: BOS, then seeded random ids in 3..vocab-1
python3 -c '
import random, sys
sys.path.insert(0, sys.argv[1])
from compare import read
kv = read(sys.argv[2])[0]
bos, vocab = kv["tokenizer.ggml.bos_token_id"][1], len(kv["tokenizer.ggml.tokens"][1])
r = random.Random(1)
print(" ".join(str(t) for t in [bos] + [r.randint(3, vocab - 1) for _ in range(int(sys.argv[3]) - 1)]))
' "$root/bench/quant_vs_llama" "$tmp/f32.gguf" "$n_tokens" >"$tmp/tokens.txt"

export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1
run() { # NAME: the five runs of $tmp/NAME.gguf
  local f=$tmp/$1.gguf o=$tmp/$1
  "$tmp/ember_logprobs" "$f" vulkan "$tmp/tokens.txt" "$o.ev" 2>>"$tmp/devices.log"
  "$tmp/ember_logprobs" "$f" cpu "$tmp/tokens.txt" "$o.ec" 2>>"$tmp/devices.log"
  "$tmp/llama_logprobs_vulkan" "$vklib" "$f" "$tmp/tokens.txt" "$o.lv" 2 one 2>>"$tmp/devices.log"
  "$tmp/llama_logprobs_vulkan" "$vklib" "$f" "$tmp/tokens.txt" "$o.lvb" 2 2>>"$tmp/devices.log"
  "$tmp/llama_logprobs_cpu" "$cpulib" "$f" "$tmp/tokens.txt" "$o.lc" 1 2>>"$tmp/devices.log"
}
done_names=(f32)
echo "f32 (the input) ..."
run f32
for name in "${names[@]}"; do
  ftype=$(python3 "$root/bench/quant_vs_llama/compare.py" --llama-ftype "$llama/src" "$name") ||
    { echo "$name: llama-quantize takes no such name"; exit 2; }
  echo "$name (llama_model_quantize, file type $ftype) ..."
  "$tmp/llama_quantize" "$tmp/f32.gguf" "$tmp/$name.gguf" "$ftype" rules >"$tmp/quantize.log" 2>&1 ||
    { echo "$name: llama.cpp failed"; tail -3 "$tmp/quantize.log"; exit 1; }
  run "$name"
  done_names+=("$name")
done
echo
devices() { sed -n "$1" "$tmp/devices.log" | sort -u | paste -sd, -; }
echo "Devices: Ember Vulkan: $(devices 's/^.* on \(.*\): [0-9]* tokens$/\1/p' | sed 's/,*cpu,*//');" \
  "llama.cpp Vulkan: $(devices 's/^device Vulkan[0-9]* (\(.*\))$/\1/p');" \
  "llama.cpp CPU: $(devices 's|^load_backend: loaded CPU backend from .*/||p' | paste -sd, -)"
echo "Model: make-test-model --dim 256 --layers 4 --heads 8 --kv-heads 2 --ffn 512 --vocab 512 --ctx 256 --seed 1 (F32);" \
  "$n_tokens tokens (BOS, then random ids in 3..511, seed 1)"
echo
status=0
python3 "$here/table.py" "$tmp" "${done_names[@]}" || status=$?
echo "($(date +%Y-%m-%d), llama.cpp $llama_version, npm node-llama-cpp $version, $(($(date +%s) - t0)) s)"
exit $status
