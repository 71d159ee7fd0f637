#!/usr/bin/env bash
# speed-vs-llama.sh — each weight type's prefill and decode speed in Ember beside
# llama.cpp's, on the same files (issue 22, part 7; docs/quantization.md).
# A random F32 model of a small Llama's shape (make-test-model --dim 2048 --layers 4
# --heads 32 --kv-heads 8 --ffn 8192 --vocab 32000 --ctx 2048 --seed 1) is quantized by
# llama.cpp's llama_model_quantize (what plain `llama-quantize IN OUT NAME` runs: the
# presets' per-tensor mixes) to each NAME ("f32": the input itself), and every file is run
#   ember     `ember generate --json`, Vulkan backend (EMBER_DEVICE, default device 0:
#             lavapipe here)
#   cpu1      llama.cpp, CPU backend, 1 thread
#   cpu2      llama.cpp, CPU backend, 2 threads
#   vulkan    llama.cpp, Vulkan backend, every layer on the device (GGML_VK_VISIBLE_DEVICES,
#             default 0: lavapipe here), 1 host thread
# on one prompt: the first 92 words of bench/data/story.txt (127 tokens with BOS, as
# `ember tokenize` makes them; llama.cpp is given those ids), then N_GEN (64) tokens,
# greedy, end of generation ignored. Prefill tok/s = prompt tokens / the prompt's time;
# decode tok/s = (N_GEN - 1) / the time of the later tokens (as `ember generate` counts).
# llama.cpp through bench/speed_vs_llama/llama_speed.c: the prompt in one llama_decode,
# one untimed warm-up run first (as llama-bench), llama.cpp's defaults otherwise (flash
# attention auto, KV cache F16). Ember: one short untimed run of each file before the
# rounds (its pipeline cache filled, as at a user's second start); KV cache F32.
# R rounds (default 5), each running every (file, configuration) once in the same order;
# the tables give the median and (min-max) of each cell, llama.cpp's CPU as the better of
# 1 and 2 threads per metric and both, and what a decoded token reads (the matrices but
# the embedding: every weight once per token) times the decode rate. The machine's load
# is printed before and after each round. Exit 0 when every run worked (a failed run is a
# cell "failed", exit 1).
# llama.cpp: as bench/logprobs-vs-llama.sh (npm node-llama-cpp, or LLAMA_CPP_DIR; see
# bench/llama_cpp.sh). Ember: build/ember (EMBER_BUILD=DIR for another build). The files
# are kept in SPEED_DIR (default build/speed-vs-llama) and made again when the model or
# llama.cpp changes. Not part of the test suite (network, time: about 6 minutes a round
# for the issue's seven names on 2 cores, mostly llama.cpp's Vulkan backend on lavapipe).
# MODEL_ARGS: more make-test-model options for the model, after the shape (a family's:
# `--arch qwen3 --heads 16 --head-dim 128` for a Qwen3 shape; docs/models.md), with
# SPEED_DIR kept per model (default build/speed-vs-llama-<arch>).
# SPEED_CONFIGS: the configurations to run (default "ember cpu1 cpu2 vulkan"; a table cell
# of one left out says "not run": llama.cpp's Vulkan backend on lavapipe takes ten minutes
# a run of a model of 1.5 GB).
#   bench/speed-vs-llama.sh [--rounds R] [NAME ...]
# NAME: llama-quantize's names (default: q8_0 q4_k_m q5_k_m q6_k q4_0 iq4_xs bf16 f16 f32;
# f32: the input itself).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/bench/speed_vs_llama
build=${EMBER_BUILD:-$root/build}
ember=$build/ember
rounds=5
n_gen=${N_GEN:-64}
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(q8_0 q4_k_m q5_k_m q6_k q4_0 iq4_xs bf16 f16 f32)
model_args=(${MODEL_ARGS:-})
arch_name=$(sed -n 's/.*--arch \([a-z0-9]*\).*/\1/p' <<<"${MODEL_ARGS:-}")
files=${SPEED_DIR:-$build/speed-vs-llama${arch_name:+-$arch_name}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
echo "load before: $(uptime)"

. "$root/bench/llama_cpp.sh"
llama_cpp_fetch "$tmp" vulkan
llama_cpp_cc cpu "$tmp/llama_quantize" "$root/bench/quant_vs_llama/llama_quantize.c"
llama_cpp_cc cpu "$tmp/llama_speed_cpu" "$here/llama_speed.c"
llama_cpp_cc vulkan "$tmp/llama_speed_vulkan" "$here/llama_speed.c"
echo "llama.cpp $llama_version (npm node-llama-cpp $version)"

shape=(--dim 2048 --layers 4 --heads 32 --kv-heads 8 --ffn 8192 --vocab 32000 --ctx 2048 "${model_args[@]}")
mkdir -p "$files"
stamp="make-test-model ${shape[*]} --type f32 --seed 1; llama.cpp $llama_version"
if [ "$(cat "$files/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$files"/*.gguf
  echo "$stamp" >"$files/stamp"
fi
[ -f "$files/f32.gguf" ] || "$ember" make-test-model "$files/f32.gguf" "${shape[@]}" --type f32 --seed 1 >/dev/null
for name in "${names[@]}"; do
  [ "$name" != f32 ] && [ ! -f "$files/$name.gguf" ] || continue
  ftype=$(python3 "$root/bench/quant_vs_llama/compare.py" --llama-ftype "$llama/src" "$name") ||
    { echo "$name: llama-quantize takes no such name"; exit 2; }
  echo "$name: llama_model_quantize, file type $ftype ..."
  "$tmp/llama_quantize" "$files/f32.gguf" "$files/$name.tmp" "$ftype" rules >"$tmp/quantize.log" 2>&1 ||
    { echo "$name: llama.cpp failed"; tail -3 "$tmp/quantize.log"; exit 1; }
  mv "$files/$name.tmp" "$files/$name.gguf"
done

prompt=$(tr -s ' \n' ' ' <"$root/bench/data/story.txt" | cut -d' ' -f1-92)
"$ember" tokenize -m "$files/f32.gguf" -p "$prompt" --json | tr -d '{}[],' | sed 's/"tokens"://' >"$tmp/tokens.txt"
n_prompt=$(wc -w <"$tmp/tokens.txt")
echo "prompt: $n_prompt tokens; $n_gen generated"

export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
read -r -a configs <<<"${SPEED_CONFIGS:-ember cpu1 cpu2 vulkan}"
field() { grep -o "\"$1\": [0-9.]*" <<<"$2" | cut -d' ' -f2 || true; } # empty when the run failed
run() { # ROUND NAME CONFIG: one run, one line of $tmp/runs.tsv
  local f=$files/$2.gguf out
  [ "$2" = f32 ] && f=$files/f32.gguf
  case $3 in
    ember) out=$("$ember" generate -m "$f" -p "$prompt" -n "$n_gen" --ignore-eos --temp 0 --json 2>>"$tmp/err.log") ;;
    cpu1) out=$("$tmp/llama_speed_cpu" "$cpulib" "$f" "$tmp/tokens.txt" "$n_gen" 1 2>>"$tmp/llama.log") ;;
    cpu2) out=$("$tmp/llama_speed_cpu" "$cpulib" "$f" "$tmp/tokens.txt" "$n_gen" 2 2>>"$tmp/llama.log") ;;
    vulkan) out=$("$tmp/llama_speed_vulkan" "$vklib" "$f" "$tmp/tokens.txt" "$n_gen" 1 2>>"$tmp/llama.log") ;;
  esac || out=
  local p d np ng
  p=$(field prefill_tok_s "$out") d=$(field decode_tok_s "$out") np=$(field n_prompt "$out") ng=$(field n_gen "$out")
  if [ -z "$p" ] || [ -z "$d" ] || [ "$np" != "$n_prompt" ] || [ "$ng" != "$n_gen" ]; then
    printf '%s\t%s\t%s\tfailed\t\t\n' "$1" "$2" "$3" >>"$tmp/runs.tsv"
    printf 'round %s  %-7s %-7s failed (n_prompt %s, n_gen %s)\n' "$1" "$2" "$3" "${np:-?}" "${ng:-?}"
    return
  fi
  printf '%s\t%s\t%s\tok\t%s\t%s\n' "$1" "$2" "$3" "$p" "$d" >>"$tmp/runs.tsv"
  printf 'round %s  %-7s %-7s prefill %8.2f  decode %7.2f tok/s\n' "$1" "$2" "$3" "$p" "$d"
}
# Ember's warm-up: one short run of each file, so that its pipelines are in the on-disk
# cache (a user's second start) as llama.cpp's are warmed up in each of its runs.
for name in "${names[@]}"; do
  f=$files/$name.gguf
  "$ember" generate -m "$f" -p "$prompt" -n 2 >/dev/null 2>&1 || true
done
: >"$tmp/runs.tsv"
for r in $(seq "$rounds"); do
  echo "round $r of $rounds, load: $(uptime | sed 's/.*load average: //')"
  for name in "${names[@]}"; do
    for c in "${configs[@]}"; do run "$r" "$name" "$c"; done
  done
done
echo "load after: $(uptime)"
mkdir -p "$tmp/table"
echo
devices() { sed -n "$1" "$tmp/llama.log" | sort -u | paste -sd, -; }
echo "$(date +%Y-%m-%d); Ember $("$ember" --version | cut -d' ' -f2) at $(git -C "$root" rev-parse --short HEAD)" \
  "on $("$ember" info | head -1 | sed 's/^device [0-9]*: //');" \
  "llama.cpp $llama_version (npm node-llama-cpp $version), Vulkan on" \
  "$(devices 's/^device Vulkan[0-9]* (\(.*\))$/\1/p'), CPU backend" \
  "$(devices 's|^load_backend: loaded CPU backend from .*/libggml-cpu-\(.*\)\.so$|\1|p')," \
  "flash attention: $(devices 's/^.*: Flash Attention \(.*\)$/\1/p');" \
  "$(nproc) cores; Mesa $(dpkg-query -W -f '${Version}' mesa-vulkan-drivers 2>/dev/null || echo '?')"
echo "Model: make-test-model ${shape[*]} --seed 1, quantized by llama.cpp;" \
  "prompt $n_prompt tokens, $n_gen generated; tok/s, median (min-max) of $rounds interleaved rounds"
echo
status=0
python3 "$here/table.py" "$tmp/runs.tsv" "$files" "${names[@]}" || status=$?
grep -qv 'Flash Attention\|^device \|^load_backend' "$tmp/llama.log" "$tmp/err.log" 2>/dev/null &&
  { echo; echo "messages of the runs:"; grep -hv 'Flash Attention\|^device \|^load_backend' "$tmp/llama.log" "$tmp/err.log" | sort | uniq -c | head -20; }
echo "($(($(date +%s) - t0)) s)"
exit $status
