#!/usr/bin/env bash
# `--profile` of ember generate and ember bench (docs/profiling.md), on a made F32 model
# (2 layers): the tables in text, and the JSON "profile" object with its per-step counts
# (1 embed + 8 a layer + norm, LM head, argmax dispatches), kernels and weight bytes.
# Engine numbers to the byte are tests/test_profile.c's; this checks the command line,
# and --kernels (forced variants: the pipeline names say what ran).
set -uo pipefail
ember=${EMBER_BIN:?EMBER_BIN: the ember program}
source "$(dirname "${BASH_SOURCE[0]}")/check_fixture.sh"

model="$EMBER_TEST_TMP/profile_cli.gguf"
"$ember" make-test-model "$model" --dim 128 --layers 2 --heads 8 --kv-heads 2 --ffn 320 --vocab 512 --ctx 256 \
    --type f32 --seed 5 >/dev/null || { echo "FAIL: make-test-model"; exit 1; }

# ---- generate: the tables on stderr, the text on stdout ----
out=$("$ember" generate -m "$model" -p "hello" -n 6 --ignore-eos --profile 2>&1 >/dev/null); rc=$?
echo "$out"
[ $rc -eq 0 ]; check "generate --profile: exit 0 (got $rc)" $?
has "$out" "^profile: prefill, 1 steps, [0-9]+ tokens"; check "generate: the prefill phase" $?
has "$out" "^profile: decode, 5 steps, 5 tokens \(1\.00 a step\)$"; check "generate: 5 decode steps" $?
# 1 embed + 8 a layer + 3, or 6 a layer where the device fuses the RMSNorms (GPUs)
has "$out" "^  per step   (20\.0 dispatches, 19|16\.0 dispatches, 15)\.0 barriers, 1\.00 submissions; GPU [0-9.]+ ms; host [0-9.]+ ms$"
check "generate: dispatches, barriers, submissions a step" $?
has "$out" "^  weights    [0-9.]+ MB a step, [0-9.]+ MB a token; [0-9.]+ GB/s"; check "generate: weights and bandwidth" $?
has "$out" "^  read back  4 bytes a step"; check "generate: read back, the argmax" $?
has "$out" "^  linear_f32[a-z0-9_]* +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+ +[0-9.]+$"; check "generate: a decode linear row" $?
has "$out" "^  attention[a-z0-9_]* +2\.00 .* - +-$"; check "generate: attention reads no weights" $?

json=$("$ember" generate -m "$model" -p "hello" -n 6 --ignore-eos --profile --json); rc=$?
[ $rc -eq 0 ]; check "generate --profile --json: exit 0" $?
python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
p = d["profile"]
assert p["gpu_timed"] is True, p
dec = p["decode"]
assert dec["steps"] == 5 and dec["tokens"] == 5, dec
assert dec["dispatches_per_step"] in (20, 16), dec  # 16: RMSNorms fused (GPUs)
assert dec["barriers_per_step"] == dec["dispatches_per_step"] - 1 and dec["submissions_per_step"] == 1, dec
names = [k["name"] for k in dec["kernels"]]
for want in ("embed", "rmsnorm", "rope_store", "argmax"):
    assert want in names, names
assert sum(k["dispatches"] for k in dec["kernels"]) == 5 * dec["dispatches_per_step"], dec
assert sum(k["weight_bytes"] for k in dec["kernels"]) == dec["weight_bytes_per_step"] * 5, dec
assert dec["weight_bytes_per_token"] == dec["weight_bytes_per_step"] > 1_500_000, dec
ms = sum(k["gpu_ms"] for k in dec["kernels"])
assert abs(ms - dec["gpu_ms_per_step"] * 5) <= 1e-3 * ms + 1e-3, (ms, dec)
bw = dec["weight_bytes_per_step"] / (dec["gpu_ms_per_step"] * 1e6)
assert abs(dec["bandwidth_gb_s"] - bw) <= 1e-3 * bw + 1e-3, (bw, dec)
assert p["prefill"]["steps"] == 1, p["prefill"]
assert dec["readback_bytes_per_step"] == 4, dec
PY
check "generate --json: the profile object" $?
# A sampled row: its 256 candidates and normalisers, or (--sample-from rows) its 512 logits.
for from in "candidates 2068" "rows 2052"; do
    set -- $from
    out=$("$ember" generate -m "$model" -p "hello" -n 4 --ignore-eos --temp 1 --top-k 40 --sample-from $1 \
          --profile 2>&1 >/dev/null)
    has "$out" "^  read back  $2 bytes a step"; check "generate --sample-from $1: $2 bytes read back" $?
done
json=$("$ember" generate -m "$model" -p "hello" -n 3 --json)
python3 -c 'import json,sys; assert "profile" not in json.loads(sys.argv[1])' "$json"
check "generate --json without --profile: no profile key" $?

# ---- bench: the tables after the report; in --json, "profile" ----
out=$("$ember" bench -m "$model" --requests 4 --prompt-len 8:16 --gen-len 4:8 --profile 2>/dev/null); rc=$?
[ $rc -eq 0 ]; check "bench --profile: exit 0 (got $rc)" $?
has "$out" "^profile: decode, [0-9]+ steps"; check "bench: the decode table" $?
json=$("$ember" bench -m "$model" --requests 4 --prompt-len 8:16 --gen-len 4:8 --profile --json 2>/dev/null)
python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
p = d["profile"]
steps = p["decode"]["steps"] + p["prefill"]["steps"]
assert steps == d["steps"], (steps, d["steps"])
assert p["decode"]["tokens"] + p["prefill"]["tokens"] == d["tokens_computed"], d
assert p["decode"]["kernels"] and p["prefill"]["kernels"], p
PY
check "bench --json: the profile object, steps and rows the engine's" $?
"$ember" bench --url http://127.0.0.1:9 --profile >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ]; check "bench --url --profile: refused (got $rc)" $?

# ---- --kernels: forced variants, seen in the profile's pipeline names ----
plain=$("$ember" generate -m "$model" -p "hello" -n 12 --ignore-eos 2>/dev/null)
out=$("$ember" generate -m "$model" -p "hello" -n 12 --ignore-eos --kernels stage=on --profile 2>"$EMBER_TEST_TMP/k.err")
err=$(cat "$EMBER_TEST_TMP/k.err")
[ -n "$plain" ] && [ "$out" = "$plain" ]; check "--kernels stage=on: the same text (staging changes no bit)" $?
has "$err" "^  linear_f32[a-z0-9_]*_m1_st "; check "--kernels stage=on: staged decode pipelines (_st)" $?
err=$("$ember" generate -m "$model" -p "hello" -n 4 --ignore-eos --kernels lanes=16,norm-fusion=on --profile 2>&1 >/dev/null)
has "$err" "^  linear_f32[a-z0-9_]*_norm_l16_m1 "; check "--kernels lanes=16,norm-fusion=on: fused 16-lane pipelines" $?
has "$err" "^  per step   16\.0 dispatches"; check "--kernels norm-fusion=on: 6 dispatches a layer" $?
long=$(printf 'hello %.0s' {1..30})
err=$("$ember" generate -m "$model" -p "$long" -n 4 --ignore-eos --kernels matrix=on --profile 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && has "$err" "^  linear_mm_f32(_nv|_khr)?_n16 "; check "--kernels matrix=on: the matrix family's decode tiles (got $rc)" $?
has "$err" "^  linear_mm_f32(_nv|_khr)?_n64 "; check "--kernels matrix=on: its prompt tiles" $?
# coop=off: by FMA on any device (no _nv/_khr suffix)
err=$("$ember" generate -m "$model" -p "$long" -n 2 --ignore-eos --kernels matrix=on,coop=off --profile 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && has "$err" "^  linear_mm_f32_n64 "; check "--kernels matrix=on,coop=off: the FMA tiles (got $rc)" $?
for bad in lanes=12 stage=yes speed=on coop=on; do
    err=$("$ember" generate -m "$model" -p "hello" -n 1 --kernels $bad 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] && has "$err" "^ember: --kernels"; check "--kernels $bad: a usage error naming --kernels (got $rc)" $?
done

finish test_profile_cli
