#!/usr/bin/env bash
# The serving comparisons quoted in README (issue 4), on one model, side by side:
#   continuous vs static batching, paged vs contiguous KV, 16 sequences vs 1, a shared
#   prefix vs none, chunked prefill under long prompts, and preemption with few blocks.
#   bench/serving.sh [quick]     (quick: fewer requests, for a smoke run)
# The batching comparison runs the workload for each seed of SEEDS (default 1-10: one
# seed is one draw of 48 lengths, and the ratio depends on the draw, 1.5x-1.9x), the
# three modes taking turns; ROUNDS=N repeats each seed N times (the machine is shared:
# single runs vary by 20-30 %). It prints each seed's median ratio, then the median and
# the lowest over the seeds. ONLY=batching stops after that comparison; SEEDS= (empty)
# skips it.
# TYPE=f32 (default) or q8_0 picks the weights of the generated model (MODEL overrides).
# F32 is the default because on lavapipe it is the faster format at this size: Q8_0's
# dequantization makes each extra token of a step cost more ALU (docs/kernels.md).
set -euo pipefail
cd "$(dirname "$0")/.."
EMBER=${EMBER:-build/ember}
TYPE=${TYPE:-f32}
MODEL=${MODEL:-build/bench-serving-$TYPE.gguf}
[ -x "$EMBER" ] || { echo "build first: cmake -S . -B build && cmake --build build" >&2; exit 1; }
[ -f "$MODEL" ] || "$EMBER" make-test-model "$MODEL" --dim 256 --layers 4 --heads 8 --kv-heads 4 --ffn 768 \
  --vocab 4096 --ctx 4096 --type "$TYPE" --seed 1
N=48; [ "${1:-}" = quick ] && N=16
ROUNDS=${ROUNDS:-1}
field() { grep -o "\"$1\": [0-9.]*" <<<"$2" | head -1 | cut -d' ' -f2; }
sub() { grep -o "\"$1\": {[^}]*}" <<<"$2" | head -1; }
run() { echo "\$ ember bench -m MODEL $*" >&2; "$EMBER" bench -m "$MODEL" --json "$@"; }
ratio() { awk -v a="$(field throughput_tok_s "$1")" -v b="$(field throughput_tok_s "$2")" 'BEGIN{printf "%.2f", a/b}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p99_p50() { awk -v s="$(sub itl_ms "$1")" 'BEGIN{match(s,/"p50": [0-9.]+/); p50=substr(s,RSTART+7,RLENGTH-7);
  match(s,/"p99": [0-9.]+/); p99=substr(s,RSTART+7,RLENGTH-7); printf "%.2f", p99/p50}'; }

echo "== continuous vs static batching ($N requests, prompts 8-200, outputs 8-160, 16 at a time)"
work() { echo "--requests $N --rate inf --prompt-len 8:200 --gen-len 8:160 --max-seqs 16 --seed $1"; }
SEEDS=${SEEDS-1 2 3 4 5 6 7 8 9 10}  # SEEDS= (empty) skips this comparison
all_s=(); all_g=(); kv7=""
for seed in $SEEDS; do
  rs=(); rg=()
  for r in $(seq "$ROUNDS"); do
    c=$(run $(work "$seed") --batching continuous); s=$(run $(work "$seed") --batching static)
    g=$(run $(work "$seed") --batching static-ragged)
    echo "seed $seed: continuous $(field throughput_tok_s "$c") tok/s, $(field steps "$c") steps," \
      "$(field tokens_computed "$c") rows; static (prompts padded) $(field throughput_tok_s "$s") tok/s," \
      "$(field steps "$s") steps, $(field tokens_computed "$s") rows ($(field padding_tokens "$s") padding):" \
      "ratio $(ratio "$c" "$s");" \
      "static-ragged $(field throughput_tok_s "$g") tok/s, $(field padding_tokens "$g") padding rows: ratio $(ratio "$c" "$g")"
    rs+=("$(ratio "$c" "$s")"); rg+=("$(ratio "$c" "$g")")
    if [ "$seed" = 7 ]; then kv7=$c; fi  # the KV comparison below runs on seed 7
  done
  ms=$(median "${rs[@]}"); mg=$(median "${rg[@]}")
  [ "$ROUNDS" -gt 1 ] && echo "seed $seed: median vs static $ms (${rs[*]}); vs static-ragged $mg (${rg[*]})"
  all_s+=("$ms"); all_g+=("$mg")
done
lowest() { printf '%s\n' "$@" | sort -g | head -1; }
if [ -n "$SEEDS" ]; then
  echo "continuous vs static over seeds $SEEDS: median $(median "${all_s[@]}"), lowest $(lowest "${all_s[@]}") (${all_s[*]})"
  echo "continuous vs static-ragged: median $(median "${all_g[@]}"), lowest $(lowest "${all_g[@]}") (${all_g[*]})"
fi
[ "${ONLY:-}" = batching ] && exit 0

echo "== KV waste at peak, paged vs contiguous (same workload)"
mix=$(work 7); p=${kv7:-$(run $mix)}; k=$(run $mix --kv contiguous); p8=$(run $mix --kv-block-size 8)
echo "paged: $(sub kv "$p")"; echo "paged, 8-token blocks: $(sub kv "$p8")"; echo "contiguous: $(sub kv "$k")"

echo "== 16 concurrent decoding sequences vs 1 (16 requests, prompt 16, output 64)"
dec="--requests 16 --rate inf --prompt-len 16:16 --gen-len 64:64 --seed 3"
a=$(run $dec --max-seqs 16); b=$(run $dec --max-seqs 1)
echo "16 at a time: $(field throughput_tok_s "$a") tok/s; 1 at a time: $(field throughput_tok_s "$b") tok/s;" \
  "ratio $(ratio "$a" "$b")"

echo "== 128-token shared prefix vs none (16 requests at 2/s)"
pre="--requests 16 --rate 2 --prompt-len 16:64 --gen-len 16:16 --max-seqs 16 --shared-prefix 128 --seed 5"
x=$(run $pre); y=$(run $pre --no-prefix-cache)
echo "shared: prefix_hit_tokens $(field prefix_hit_tokens "$x"), $(sub ttft_ms "$x")"
echo "no sharing: prefix_hit_tokens $(field prefix_hit_tokens "$y"), $(sub ttft_ms "$y")"

echo "== chunked prefill: 2000-token prompts arriving among decodes; 32-token steps sized by cost, by rows, unchunked"
chk="--requests 12 --rate 1 --prompt-len 16:2000 --gen-len 48:48 --max-seqs 12 --seed 11"
z=$(run $chk --max-batch-tokens 32 --chunk-ctx 512); y=$(run $chk --max-batch-tokens 32); u=$(run $chk --max-batch-tokens 2048)
line() { echo "$1: $(sub itl_ms "$2"), p99/p50 = $(p99_p50 "$2"); TTFT $(sub ttft_ms "$2"); $(field duration_s "$2") s"; }
line "by cost (--chunk-ctx 512)" "$z"; line "by rows" "$y"; line "unchunked" "$u"

echo "== too few KV blocks: --kv-blocks 64 with 16 long requests"
few="--requests 16 --rate inf --prompt-len 100:200 --gen-len 64:96 --max-seqs 16 --kv-blocks 64 --seed 13"
f=$(run $few)
echo "completed $(field completed "$f") of $(field requests "$f"), preemptions $(field preemptions "$f")"
