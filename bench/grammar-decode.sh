#!/usr/bin/env bash
# bench/grammar-decode.sh — decode speed of a constrained stream against a free one (issue
# 24's goal: at least 0.9x), on this machine's Vulkan device. A model with random weights
# and a made-up 32k vocabulary (so the masks are as big as Llama 2's) generates N tokens
# free, then under a JSON Schema whose one string never ends (so both runs decode N
# tokens), greedy and at temperature 1, in interleaved rounds; prints the median decode
# tok/s of each and their ratio as JSON lines.
#   bench/grammar-decode.sh [ROUNDS N DIM LAYERS]     (default 5 128 512 8)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} n=${2:-128} dim=${3:-512} layers=${4:-8}
ember=build/ember
out=build/grammar-decode
mkdir -p "$out"
model=$out/model-$dim-$layers.gguf
[ -s "$model" ] || "$ember" make-test-model "$model" --dim "$dim" --layers "$layers" --heads 8 --kv-heads 8 \
  --ffn $((dim * 3)) --vocab 32000 --ctx 1024 --seed 5 >/dev/null
printf '{"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"]}' >"$out/story.json"
run() { # mode temp -> decode tok/s
  local extra=()
  [ "$1" = constrained ] && extra=(--json-schema "$out/story.json")
  "$ember" generate -m "$model" -p "Once upon a time" -n "$n" --ignore-eos --temp "$2" --seed 1 --json "${extra[@]}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_tok_s"])'
}
for temp in 0 1; do
  free=() constrained=()
  for ((r = 0; r < rounds; r++)); do
    free+=("$(run free $temp)")
    constrained+=("$(run constrained $temp)")
  done
  python3 - "$temp" "$n" "${free[*]}" "${constrained[*]}" <<'PY'
import json, statistics, sys
temp, n, free, con = sys.argv[1], int(sys.argv[2]), [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
f, c = statistics.median(free), statistics.median(con)
print(json.dumps({"temperature": float(temp), "tokens": n, "free_tok_s": round(f, 1), "constrained_tok_s": round(c, 1),
                  "ratio": round(c / f, 3), "free_all": free, "constrained_all": con}))
PY
done
