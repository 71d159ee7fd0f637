#!/usr/bin/env bash
# Speculative decoding figures quoted in README (issue 5), each against plain decoding
# in the same run; medians of RUNS runs.
#   bench/speculative.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
EMBER=${EMBER:-build/ember}
[ -x "$EMBER" ] || { echo "build first" >&2; exit 1; }
TARGET=${TARGET:-build/bench-spec-f32.gguf}
DRAFT=${DRAFT:-build/bench-spec-q8_0.gguf}
[ -f "$TARGET" ] || "$EMBER" make-test-model "$TARGET" --dim 1024 --layers 8 --heads 16 --kv-heads 4 --ffn 2816 \
  --vocab 8192 --ctx 1024 --type f32 --seed 2
[ -f "$DRAFT" ] || "$EMBER" quantize "$TARGET" "$DRAFT" q8_0
field() { grep -o "\"$1\": [0-9.]*" <<<"$2" | head -1 | cut -d' ' -f2; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

compare() { # name, model, prompt, n, speculation flags...
  local name=$1 model=$2 prompt=$3 n=$4; shift 4
  local plain=() spec=() acc="" tps=""
  for r in $(seq "$RUNS"); do
    a=$("$EMBER" generate -m "$model" -p "$prompt" -n "$n" --ignore-eos --json)
    b=$("$EMBER" generate -m "$model" -p "$prompt" -n "$n" --ignore-eos --json "$@")
    [ "$(grep -o '"tokens": \[[^]]*\]' <<<"$a")" = "$(grep -o '"tokens": \[[^]]*\]' <<<"$b")" ] ||
      echo "WARNING: speculative output differs from plain" >&2
    plain+=("$(field decode_tok_s "$a")"); spec+=("$(field decode_tok_s "$b")")
    acc=$(field acceptance_rate "$b"); tps=$(field tokens_per_step "$b")
  done
  local p s; p=$(median "${plain[@]}"); s=$(median "${spec[@]}")
  echo "$name: plain $p tok/s, speculative $s tok/s, speed-up $(awk -v a="$s" -v b="$p" 'BEGIN{printf "%.2f", a/b}'),"\
       "acceptance $acc, tokens/step $tps   [ember generate ... $*]"
}

compare "Q8_0 draft of an F32 target (dim 1024, 8 layers)" "$TARGET" "the" 64 --draft "$DRAFT" --draft-k 4
compare "the same, k = 2 (the best k on lavapipe)" "$TARGET" "the" 64 --draft "$DRAFT" --draft-k 2
if [ -f ../shared/models/stories260K/stories260K-f32.v3.gguf ]; then
  story=$(head -c 600 ../shared/models/stories260K/expected/greedy200_f32.txt)
  compare "n-gram on stories260K, story given twice" ../shared/models/stories260K/stories260K-f32.v3.gguf \
    "$story $story" 150 --ngram 3 --draft-k 8
fi
