#!/usr/bin/env bash
# Prefill and decode speed of `ember generate` on a Q8_0 model shaped like a small Llama
# (dim 2048, 4 layers, 32 heads, 8 KV heads, FFN 8192, vocab 32000; random weights).
# Prints each run and the medians.
#   bench/generate.sh [RUNS] [PROMPT_TOKENS_APPROX] [GEN_TOKENS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
PROMPT_WORDS=${2:-128}
GEN=${3:-64}
EMBER=${EMBER:-build/ember}
MODEL=${MODEL:-build/bench-q8_0-2048.gguf}
[ -x "$EMBER" ] || { echo "build first: cmake -S . -B build && cmake --build build" >&2; exit 1; }
if [ ! -f "$MODEL" ]; then
  "$EMBER" make-test-model "$MODEL" --dim 2048 --layers 4 --heads 32 --kv-heads 8 --ffn 8192 \
    --vocab 32000 --ctx 2048 --type q8_0 --seed 1
fi
prompt=$(for i in $(seq "$PROMPT_WORDS"); do printf 'the '; done)
echo "device: $("$EMBER" info | head -1)"
pre=(); dec=(); ttft=()
for r in $(seq "$RUNS"); do
  out=$("$EMBER" generate -m "$MODEL" -p "$prompt" -n "$GEN" --ignore-eos --json)
  p=$(grep -o '"prefill_tok_s": [0-9.]*' <<<"$out" | cut -d' ' -f2)
  d=$(grep -o '"decode_tok_s": [0-9.]*' <<<"$out" | cut -d' ' -f2)
  t=$(grep -o '"ttft_ms": [0-9.]*' <<<"$out" | cut -d' ' -f2)
  np=$(grep -o '"n_prompt": [0-9]*' <<<"$out" | cut -d' ' -f2)
  echo "run $r: n_prompt $np, prefill $p tok/s, decode $d tok/s, ttft $t ms"
  pre+=("$p"); dec+=("$d"); ttft+=("$t")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median of $RUNS: prefill $(median "${pre[@]}") tok/s, decode $(median "${dec[@]}") tok/s, ttft $(median "${ttft[@]}") ms"
