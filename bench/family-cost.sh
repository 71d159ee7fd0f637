#!/usr/bin/env bash
# family-cost.sh — what a family's own steps cost in Ember: the same-sized files of
# several families (bench/speed-vs-llama.sh's, made with MODEL_ARGS: dim 2048, 4 layers,
# the same query width) run in turn, round after round, with `ember generate --json` on
# speed-vs-llama's prompt (127 tokens) and 64 greedy tokens; the table gives each file's
# median prefill and decode tok/s with (min-max) over the rounds (issue 41, item 6).
#   bench/family-cost.sh [--rounds R] [FAMILY ...]       (default: llama qwen3 gemma3)
# FAMILY names a folder build/speed-vs-llama-FAMILY holding q8_0.gguf and q4_k_m.gguf:
# run bench/speed-vs-llama.sh with that family's MODEL_ARGS first (docs/models.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EMBER_BUILD:-$root/build}
ember=$build/ember
rounds=7
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(llama qwen3 gemma3)
types=(q8_0 q4_k_m)
for fam in "${families[@]}"; do
  for t in "${types[@]}"; do
    [ -f "$build/speed-vs-llama-$fam/$t.gguf" ] ||
      { echo "$build/speed-vs-llama-$fam/$t.gguf is missing (bench/speed-vs-llama.sh with MODEL_ARGS)"; exit 2; }
  done
done
prompt=$(tr -s ' \n' ' ' <"$root/bench/data/story.txt" | cut -d' ' -f1-92)
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
field() { grep -o "\"$1\": [0-9.]*" <<<"$2" | cut -d' ' -f2; }
for fam in "${families[@]}"; do # one untimed run each: the pipeline cache filled
  "$ember" generate -m "$build/speed-vs-llama-$fam/q8_0.gguf" -p "$prompt" -n 2 >/dev/null 2>&1 || true
done
echo "load before: $(uptime)"
for r in $(seq "$rounds"); do
  for t in "${types[@]}"; do
    for fam in "${families[@]}"; do
      out=$("$ember" generate -m "$build/speed-vs-llama-$fam/$t.gguf" -p "$prompt" -n 64 --ignore-eos --temp 0 --json 2>/dev/null)
      echo "$fam $t $(field prefill_tok_s "$out") $(field decode_tok_s "$out")" >>"$runs"
    done
  done
done
echo "load after: $(uptime)"
echo "$(date +%Y-%m-%d); Ember at $(git -C "$root" rev-parse --short HEAD) on" \
  "$("$ember" info | head -1 | sed 's/^device [0-9]*: //'); $rounds rounds, tok/s, median (min-max)"
echo
echo "| family | file | prefill | decode |"
echo "|---|---|---|---|"
python3 - "$runs" "${types[@]}" -- "${families[@]}" <<'EOF'
import statistics, sys
args = sys.argv[2:]; cut = args.index("--"); types, fams = args[:cut], args[cut + 1:]
rows = [l.split() for l in open(sys.argv[1])]
def cell(v): return f"{statistics.median(v):.3g} ({min(v):.3g}-{max(v):.3g})"
for t in types:
    for f in fams:
        got = [r for r in rows if r[0] == f and r[1] == t and len(r) == 4]
        if not got: print(f"| {f} | {t} | failed | failed |"); continue
        print(f"| {f} | {t.upper()} | {cell([float(r[2]) for r in got])} | {cell([float(r[3]) for r in got])} |")
EOF
