#!/usr/bin/env bash
# big-model.sh — an 8B-class model on this machine (issue 22, part 5; docs/quantization.md):
# make-test-model writes a model of Llama-3.1-8B's shape (dim 4096, 32 layers, 32/8 heads,
# FFN 14336, vocab 128256, random weights) as llama.cpp's Q4_K_M mix, tensor by tensor;
# `ember info -m` says what it needs of device memory for its context and whether that
# fits 8 GiB, before anything is loaded; `ember generate` loads it (memory-mapped, tensors
# over the device's binding range cut into parts) under a memory budget of 8 GiB and
# generates. Peak host memory (GNU time's maximum resident set) of making and of
# loading + generating is measured beside the file's size.
#   bench/big-model.sh [FILE]
# FILE: the model, made there when absent (default: a temporary file, removed after;
# 4.9 GB, about 8 minutes on 2 cores). Not part of the test suite (size and time).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ember=${EMBER_BIN:-$root/build/ember}
budget=${BUDGET_MIB:-8192}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=${1:-$tmp/llama-8b-shape-q4_k_m.gguf}
shape=(--dim 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 --ctx 8192 --rope-base 500000)
gib() { python3 -c "print('%.2f' % ($1 / 2**30))"; }
peak_kib() { sed -n 's/^peak \([0-9]*\)$/\1/p' "$1"; }

if [ ! -f "$model" ]; then
  echo "making $model (make-test-model ${shape[*]} --type q4_k_m) ..."
  /usr/bin/time -f "peak %M" -o "$tmp/make.time" "$ember" make-test-model "$model" "${shape[@]}" --type q4_k_m
  make_peak=$(peak_kib "$tmp/make.time")
  echo "made: $(gib "$(stat -c %s "$model")") GiB, peak host memory $(gib $((make_peak * 1024))) GiB"
fi
file_bytes=$(stat -c %s "$model")

echo
echo "== ember info -m (read from the file: no device)"
"$ember" info -m "$model" --budget "$budget"
"$ember" info -m "$model" --budget "$budget" --json >"$tmp/info.json"
"$ember" info -m "$model" --budget "$budget" --ctx 32768 --kv-type q8_0 | tail -3

echo
echo "== ember generate -m ... --memory-budget $budget (lavapipe)"
/usr/bin/time -f "peak %M" -o "$tmp/gen.time" \
  "$ember" generate -m "$model" -p "Once upon a time" -n 16 --ignore-eos --json --memory-budget "$budget" >"$tmp/gen.json"
cat "$tmp/gen.json"
gen_peak=$(peak_kib "$tmp/gen.time")

python3 - "$tmp/info.json" "$tmp/gen.json" "$file_bytes" "$gen_peak" "${make_peak:-}" <<'PY'
import json, sys
info, gen = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
file_bytes, gen_peak = int(sys.argv[3]), int(sys.argv[4]) * 1024
make_peak = int(sys.argv[5]) * 1024 if sys.argv[5] else None
G = 2**30
print()
print("| | estimate (`ember info -m`) | measured |")
print("|---|---|---|")
print("| file | | %.2f GiB |" % (file_bytes / G))
print("| weights on the device | %.2f GiB | %.2f GiB (after loading) |" % (info["weight_bytes"] / G, gen["weight_bytes"] / G))
print("| KV cache, %d tokens F32 | %.2f GiB | |" % (info["n_ctx"], info["kv_bytes"] / G))
print("| step buffers | %.2f GiB | |" % (info["activation_bytes"] / G))
print("| device memory, model + engine | %.2f GiB (fits %d MiB: %s) | %.2f GiB (engine made) |" %
      (info["total_bytes"] / G, info["budget_bytes"] >> 20, "yes" if info["fits"] else "no", gen["device_bytes"] / G))
if make_peak:
    print("| peak host memory, make-test-model | | %.2f GiB |" % (make_peak / G))
print("| peak host memory, load + generate | | %.2f GiB (%.2fx the file) |" % (gen_peak / G, gen_peak / file_bytes))
print("| load | | %.1f s |" % (gen["load_ms"] / 1000))
print("| prefill, decode | | %.2f, %.2f tok/s |" % (gen["prefill_tok_s"], gen["decode_tok_s"]))
PY
