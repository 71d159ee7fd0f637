#!/usr/bin/env bash
# `ember info` names, for every device, the variants Ember would choose and why
# (ember_device_info.variants, from ember_kernels_describe: the selection
# ember_kernels_create runs), in text and in --json. On lavapipe the subgroup size follows
# LP_NATIVE_VECTOR_WIDTH (128 bits: 4 lanes, 256: 8, 512: 16), and so do the choices: at 4
# lanes the linear falls back to shared memory (its lane groups of 8 need a multiple of 8);
# at 1024 and 2048 bits lavapipe reports 32 and 64 lanes but runs 16, so every part takes
# its baseline, says why, and a model's tokens stay those of the default width.
set -uo pipefail
ember=${EMBER_BIN:?EMBER_BIN: the ember program}
source "$(dirname "${BASH_SOURCE[0]}")/check_fixture.sh"

# ---- info -m: a model's tensors and device memory, from the file alone (no device) ----
# (its numbers against what loading allocates: tests/test_memory_estimate.c)
model="$EMBER_TEST_TMP/info_model.gguf"
"$ember" make-test-model "$model" --dim 256 --layers 4 --heads 8 --kv-heads 2 --ffn 512 --vocab 600 --ctx 512 \
    --type q4_k_m >/dev/null
out=$("$ember" info -m "$model" --budget 1024 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ]; check "info -m: exit 0 (got $rc)" $?
has "$out" "^model: +.*: llama, 4 layers, dim 256, 8/2 heads, FFN 512, vocab 600, context 512$"; check "info -m: the shape" $?
has "$out" "^file: .* Q4_K [0-9]+ tensors .* Q6_K [0-9]+ tensors"; check "info -m: the tensors by type (a mix)" $?
has "$out" "^KV cache: +512 tokens x 2\.0 KiB \(f32\) = 1\.0 MiB$"; check "info -m: KV of the context (4 layers x K,V x 2 heads x 32 x 4 bytes)" $?
has "$out" "^total: .*: fits a budget of 1024 MiB"; check "info -m: fits 1024 MiB" $?
out=$("$ember" info -m "$model" --budget 1 --ctx 4096 --kv-type q8_0 2>&1)
has "$out" "^KV cache: +4096 tokens x 576 bytes \(q8_0\) = 2\.2 MiB$"; check "info -m --ctx --kv-type: $out" $?
has "$out" "^total: .*: does not fit a budget of 1 MiB \([0-9.]+ MiB short\)"; check "info -m: does not fit 1 MiB" $?
json=$("$ember" info -m "$model" --budget 1 --json)
python3 - "$json" <<'EOF'
import json, sys
d = json.loads(sys.argv[1])
assert d["n_layers"] == 4 and d["n_ctx"] == 512 and d["kv_type"] == "f32", d
assert d["kv_bytes_per_token"] == 4 * 2 * 2 * 32 * 4 and d["kv_bytes"] == 512 * d["kv_bytes_per_token"], d
assert d["total_bytes"] == d["weight_bytes"] + d["kv_bytes"] + d["activation_bytes"], d
assert set(d["types"]) == {"F32", "Q4_K", "Q6_K"} and d["fits"] is False and d["budget_bytes"] == 1 << 20, d
assert sum(t["bytes"] for t in d["types"].values()) < d["file_bytes"], d
EOF
check "info -m --json: the fields add up" $?
# The family and what the file uses of its recipe (docs/models.md): a Gemma 3 shape with
# local layers, a head size from key_length, QK-norm and post-norms.
g3="$EMBER_TEST_TMP/info_gemma3.gguf"
"$ember" make-test-model "$g3" --arch gemma3 --dim 64 --heads 4 --kv-heads 2 --head-dim 32 --layers 3 \
    --key attention.sliding_window=8 --key attention.sliding_window_pattern=3 --key final_logit_softcapping=30 >/dev/null
out=$("$ember" info -m "$g3" 2>&1)
has "$out" "^family: +gemma3 \(Gemma 3 \(text\)\); head size 32, RoPE on 32 of 32 dims"; check "info -m: the family: $out" $?
has "$out" "^uses: .*QK-norm, post-norms, sliding window, soft-capping, GeGLU.*head size from key_length"; check "info -m: what it uses" $?
has "$out" "^window: +8 positions on 2 of 3 layers \(local base 10000\)$"; check "info -m: the window" $?
has "$out" "^soft-caps: +attention 0, final 30"; check "info -m: the caps" $?
"$ember" info -m "$g3" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["arch"] == "gemma3" and d["head_dim"] == 32 and d["sliding_window"] == 8 and d["local_layers"] == 2, d
assert "QK-norm" in d["features"] and "post-norms" in d["features"] and d["final_softcap"] == 30, d
'
check "info -m --json: the family's fields" $?
# A path beyond ASCII (on Windows the command line reaches main() in the ANSI code page,
# where "è" is not UTF-8: ember.exe takes its arguments as UTF-8, platform/os_main.c).
cp "$model" "$EMBER_TEST_TMP/modèl ü.gguf"
out=$("$ember" info -m "$EMBER_TEST_TMP/modèl ü.gguf" 2>&1)
has "$out" "^model: +.*/modèl ü\.gguf: llama, 4 layers"; check "info -m on a path beyond ASCII: $out" $?
out=$("$ember" info -m "$EMBER_TEST_TMP/none.gguf" 2>&1); rc=$?
[ $rc -eq 1 ] && has "$out" "^ember: .*none.gguf: cannot open: No such file"; check "info -m on a missing file: exit 1 and why ($rc: $out)" $?
out=$("$ember" info -m "$model" --ctx 0 2>&1); rc=$?
[ $rc -eq 2 ] && has "$out" "^ember: --ctx wants an integer in \[1, "; check "info -m --ctx 0: exit 2 and why ($rc)" $?

out=$("$ember" info 2>&1)
echo "$out"
if has "$out" "^no Vulkan devices"; then
    echo "SKIP: no Vulkan device"
    exit 77
fi
n_dev=$(grep -c "^device [0-9]*:" <<<"$out")
for part in linear attention rmsnorm/argmax reads memory context; do
    n=$(grep -c "^    $part: " <<<"$out")
    [ "$n" -eq "$n_dev" ]; check "a '$part:' variant line for each of $n_dev device(s) (found $n)" $?
done
# The text is whole however long it grows (it was cut at 1023 bytes, mid-sentence, when
# ember_device_info held it in a fixed array): the last line is a full sentence.
n=$(grep -cE "^    context: .*; a layer's K or V pool <= [0-9]+ MiB \(maxStorageBufferRange\)$" <<<"$out")
[ "$n" -eq "$n_dev" ]; check "a whole last variant line for each of $n_dev device(s) (found $n)" $?
[ "$("$ember" info | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ]; check "info's text ends with a newline" $?
has "$out" "^    linear: .*(subgroup|shared-memory)"; check "the linear line names its reduction" $?
if has "$out" "^device 0: .*\(cpu, "; then
    has "$out" "^    linear: .*; RMSNorm its own dispatch \(CPU device: 8 dispatches a layer\)$"
    check "a CPU device keeps the RMSNorm its own dispatch (kernels.c: fused on GPUs)" $?
else
    has "$out" "^    linear: .*; RMSNorm fused into the product after it"
    check "a GPU fuses the RMSNorm into the product after it" $?
fi
has "$out" "^    attention: .*subgroup"; check "the attention line gives the subgroup reason" $?
has "$out" "^    reads: .*texel"; check "the reads line says texel (views, or their absence)" $?

json=$("$ember" info --json)
python3 - "$json" <<'EOF'
import json, re, sys
d = json.loads(sys.argv[1])["devices"]
assert d, "no devices in --json"
for dev in d:
    lines = dev["variants"]
    assert isinstance(lines, list) and lines, dev["name"]
    for part in ("linear:", "attention:", "rmsnorm/argmax:", "reads:", "memory:", "context:"):
        assert any(l.startswith(part) for l in lines), (dev["name"], part)
    assert re.search(r"; a layer's K or V pool <= \d+ MiB \(maxStorageBufferRange\)$", lines[-1]), lines[-1]
    assert all(l and "\n" not in l for l in lines), lines
EOF
check "--json has a variants array with every part, the last one whole" $?
[ "$("$ember" info --json | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ]; check "info --json ends with a newline" $?

# lavapipe: the subgroup size is the native vector width in 32-bit lanes.
if has "$out" "^device [0-9]*: llvmpipe"; then
    for case in "128 4" "256 8" "512 16"; do
        set -- $case
        w=$(LP_NATIVE_VECTOR_WIDTH=$1 "$ember" info 2>&1)
        dev=$(awk '/^device [0-9]*: llvmpipe/{on=1; print; next} /^device /{on=0} on' <<<"$w")
        has "$dev" "^  subgroup: size $2," ; check "LP_NATIVE_VECTOR_WIDTH=$1: subgroup size $2" $?
        has "$dev" "^    attention: subgroup per tile, $2 lanes" ; check "LP_NATIVE_VECTOR_WIDTH=$1: attention on $2 lanes" $?
        has "$dev" "^    rmsnorm/argmax: subgroupAdd/Max, workgroup of $2 per row" ; check "LP_NATIVE_VECTOR_WIDTH=$1: row workgroup $2" $?
        if [ "$2" -ge 8 ]; then
            has "$dev" "^    linear: subgroup lane groups of 8, .*\(subgroup $2, shuffle\)"
        else
            has "$dev" "^    linear: shared-memory partials, .*\(subgroup $2: not a multiple of 8\)"
        fi
        check "LP_NATIVE_VECTOR_WIDTH=$1: the linear variant for subgroup $2" $?
        has "$dev" "^    context: <= 56400 positions" ; check "LP_NATIVE_VECTOR_WIDTH=$1: the CPU device's context limit" $?
    done
    echo "$(LP_NATIVE_VECTOR_WIDTH=128 "$ember" info | grep -A12 '^device [0-9]*: llvmpipe')"
    # Past 512 bits lavapipe reports 32 or 64 lanes but runs 16: every part takes its
    # baseline and says why, and a model gives the tokens it gives at the default width.
    model="$EMBER_TEST_TMP/info_wide.gguf"
    "$ember" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 300 --seed 3 >/dev/null
    gen() { "$ember" generate -m "$model" -p "hi there" -n 12 --ignore-eos --json | python3 -c \
        'import json, sys; print(json.load(sys.stdin)["tokens"])'; }
    want=$(gen)
    for case in "1024 32" "2048 64"; do
        set -- $case
        w=$(LP_NATIVE_VECTOR_WIDTH=$1 "$ember" info 2>&1)
        dev=$(awk '/^device [0-9]*: llvmpipe/{on=1; print; next} /^device /{on=0} on' <<<"$w")
        has "$dev" "^  subgroup: size $2," ; check "LP_NATIVE_VECTOR_WIDTH=$1: reported subgroup size $2" $?
        n=$(grep -c "lavapipe runs 16 of the lanes it reports" <<<"$dev")
        [ "$n" -eq 3 ] ; check "LP_NATIVE_VECTOR_WIDTH=$1: linear, attention and rows on their baselines, saying why ($n)" $?
        got=$(LP_NATIVE_VECTOR_WIDTH=$1 gen)
        [ -n "$want" ] && [ "$got" = "$want" ] ; check "LP_NATIVE_VECTOR_WIDTH=$1: generate gives the same tokens ($got)" $?
    done
else
    echo "no lavapipe device: the LP_NATIVE_VECTOR_WIDTH cases do not apply"
fi

# A device too old for Ember (tests/layer_old_device.c makes every device claim Vulkan
# 1.1): info says why no variant applies; a command that needs the device names it.
# EMBER_TEST_LAYERS: where the layer is when this build has none of its own (the Windows
# build under Wine: winevulkan hands the instance to this system's Vulkan loader, which
# loads the native build's layer).
layers="${EMBER_TEST_LAYERS:-$EMBER_BUILD_DIR/tests/layers}"
if [ -f "$layers/VkLayer_ember_old_device.json" ]; then
    old=(env VK_LAYER_PATH="$layers" VK_INSTANCE_LAYERS=VK_LAYER_EMBER_old_device)
    w=$("${old[@]}" "$ember" info 2>&1)
    has "$w" "^    none: Ember needs Vulkan 1.2 \(this device has 1.1\)" ; check "info on a Vulkan 1.1 device: says why" $?
    model="$EMBER_TEST_TMP/info_old_device.gguf"
    "$ember" make-test-model "$model" --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 64 --vocab 300 >/dev/null
    w=$("${old[@]}" "$ember" generate -m "$model" -p hi -n 2 2>&1); rc=$?
    [ $rc -eq 1 ] ; check "generate on a Vulkan 1.1 device: exit 1 (got $rc)" $?
    has "$w" "has Vulkan 1.1; Ember needs 1.2" ; check "generate on a Vulkan 1.1 device: the message says why: $w" $?
else
    check "the test layer is built in $layers" 1
fi

finish test_info
