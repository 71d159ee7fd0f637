#!/usr/bin/env bash
# The serving comparisons quoted in README (issue 4), on one model, side by side:
#   continuous vs static batching, paged vs contiguous KV, 16 sequences vs 1, a shared
#   prefix vs none, chunked prefill under long prompts, and preemption with few blocks.
#   bench/serving.sh [quick]     (quick: fewer requests, for a smoke run)
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
field() { grep -o "\"$1\": [0-9.]*" <<<"$2" | head -1 | cut -d' ' -f2; }
sub() { grep -o "\"$1\": {[^}]*}" <<<"$2" | head -1; }
run() { echo "\$ ember bench -m MODEL $*" >&2; "$EMBER" bench -m "$MODEL" --json "$@"; }

echo "== continuous vs static batching ($N requests, prompts 8-200, outputs 8-160, 16 at a time)"
mix="--requests $N --rate inf --prompt-len 8:200 --gen-len 8:160 --max-seqs 16 --seed 7"
c=$(run $mix --batching continuous); s=$(run $mix --batching static)
echo "continuous: $(field throughput_tok_s "$c") tok/s; static: $(field throughput_tok_s "$s") tok/s" \
  "(static computed $(field padding_tokens "$s") padding tokens for finished members)"
echo "ratio: $(awk -v a="$(field throughput_tok_s "$c")" -v b="$(field throughput_tok_s "$s")" 'BEGIN{printf "%.2f", a/b}')"

echo "== KV waste at peak, paged vs contiguous (same workload)"
p=$c; k=$(run $mix --kv contiguous); p8=$(run $mix --kv-block-size 8)
echo "paged: $(sub kv "$p")"; echo "paged, 8-token blocks: $(sub kv "$p8")"; echo "contiguous: $(sub kv "$k")"

echo "== 16 concurrent decoding sequences vs 1 (16 requests, prompt 16, output 64)"
dec="--requests 16 --rate inf --prompt-len 16:16 --gen-len 64:64 --seed 3"
a=$(run $dec --max-seqs 16); b=$(run $dec --max-seqs 1)
echo "16 at a time: $(field throughput_tok_s "$a") tok/s; 1 at a time: $(field throughput_tok_s "$b") tok/s;" \
  "ratio $(awk -v a="$(field throughput_tok_s "$a")" -v b="$(field throughput_tok_s "$b")" 'BEGIN{printf "%.2f", a/b}')"

echo "== 128-token shared prefix vs none (16 requests at 2/s)"
pre="--requests 16 --rate 2 --prompt-len 16:64 --gen-len 16:16 --max-seqs 16 --shared-prefix 128 --seed 5"
x=$(run $pre); y=$(run $pre --no-prefix-cache)
echo "shared: prefix_hit_tokens $(field prefix_hit_tokens "$x"), $(sub ttft_ms "$x")"
echo "no sharing: prefix_hit_tokens $(field prefix_hit_tokens "$y"), $(sub ttft_ms "$y")"

echo "== chunked prefill: 2000-token prompts arriving among decodes"
chk="--requests 12 --rate 1 --prompt-len 16:2000 --gen-len 48:48 --max-seqs 12 --max-batch-tokens 64 --seed 11"
z=$(run $chk)
echo "itl: $(sub itl_ms "$z")"
awk -v s="$(sub itl_ms "$z")" 'BEGIN{match(s,/"p50": [0-9.]+/); p50=substr(s,RSTART+7,RLENGTH-7);
  match(s,/"p99": [0-9.]+/); p99=substr(s,RSTART+7,RLENGTH-7); printf "p99/p50 = %.2f\n", p99/p50}'

echo "== too few KV blocks: --kv-blocks 64 with 16 long requests"
few="--requests 16 --rate inf --prompt-len 100:200 --gen-len 64:96 --max-seqs 16 --kv-blocks 64 --seed 13"
f=$(run $few)
echo "completed $(field completed "$f") of $(field requests "$f"), preemptions $(field preemptions "$f")"
