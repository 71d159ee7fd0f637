#!/usr/bin/env bash
# The ember program explains itself: what a new user meets with bad input (docs/cli.md,
# "Bad input, and what it gets"). Each case asserts the exit status (0 done and
# --help, 1 the work failed, 2 a wrong command line) and the message.
#  - `ember COMMAND --help` (and `ember help COMMAND`) prints that command's usage on
#    stdout and exits 0, for every command `ember --help` lists;
#  - an unknown option is refused by name, an unknown value names itself;
#  - perplexity on an empty file or a directory, batch -f on a missing file, a directory,
#    an empty file; a batch prompt longer than the context names its line while the
#    others complete (with --json its entry carries "error");
#  - EMBER_DEVICE=99 fails as --device 99 does, with the index `ember info` prints;
#  - make-test-model refuses an absurd size at once; quantize refuses a Q8_0 input whose
#    rows are not whole blocks, writing nothing;
#  - chat: SIGINT stops the reply and the chat goes on to the next prompt; at the prompt
#    it says how to leave and a second one leaves; a full context offers /reset;
#  - scripts/get-model.sh without a name lists the models;
#  - tokenize reads a vocabulary-only GGUF made from stories260K's (skipped without
#    ../shared).
set -uo pipefail
ember=${EMBER_BIN:?EMBER_BIN: the ember program}
root=${EMBER_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
shared=${EMBER_SHARED:-$root/../shared}
tmp=$(mktemp -d "${EMBER_TEST_TMP:-/tmp}/cli_messages.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # NAME STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}

# expect RC PATTERN CMD...: runs `ember CMD...`, stdin empty; the exit status must be RC
# and stdout+stderr must match the extended regular expression PATTERN.
expect() {
    local rc=$1 pattern=$2 got out
    shift 2
    out=$(timeout 60 "$ember" "$@" </dev/null 2>&1)
    got=$?
    if [ "$got" -eq "$rc" ] && grep -qE -- "$pattern" <<<"$out"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: ember $*: exit $got (want $rc), output:"
        head -c 600 <<<"$out"
        echo
        echo "  (wanted /$pattern/)"
    fi
}

model=$tmp/m.gguf
"$ember" make-test-model "$model" --ctx 64 --seed 2 >/dev/null || { echo "FAIL: make-test-model"; exit 1; }
have_device=0
"$ember" info 2>/dev/null | grep -q "^device 0:" && have_device=1
backend=cpu
[ "$have_device" = 1 ] && backend=vulkan

# ---- --help, for every command ember --help lists ------------------------------------------
commands=$("$ember" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
n=$(wc -w <<<"$commands")
[ "$n" -ge 10 ]; check "ember --help lists the commands (found $n: $(echo $commands))" $?
for c in $commands; do
    out=$("$ember" "$c" --help 2>"$tmp/err"); rc=$?
    [ "$rc" -eq 0 ] && grep -q "^usage: ember $c" <<<"$out" && [ ! -s "$tmp/err" ]
    check "ember $c --help: usage on stdout, exit 0 (exit $rc, stderr: $(head -c 200 "$tmp/err"))" $?
    out=$("$ember" help "$c" 2>/dev/null); rc=$?
    [ "$rc" -eq 0 ] && grep -q "^usage: ember $c" <<<"$out"; check "ember help $c" $?
    # -h too, and after other arguments
    out=$("$ember" "$c" -m "$model" -h 2>/dev/null); rc=$?
    [ "$rc" -eq 0 ] && grep -q "^usage: ember $c" <<<"$out"; check "ember $c -m M -h" $?
done
expect 0 "^usage: ember COMMAND" --help
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "unknown command 'frobnicate'" help frobnicate

# ---- unknown options and values ------------------------------------------------------------
expect 2 "^ember generate: unknown option --verbose$" generate -m "$model" -p hi --verbose
expect 2 "^ember generate: unknown option --verbose$" generate --verbose -m "$model"
# An EMBER_MINIMAL build (bench/gpu-check.sh) has a stub for serve that only says so.
minimal=0
"$ember" serve --help 2>&1 | grep -q EMBER_MINIMAL && minimal=1
for c in $commands; do
    [ "$c" = serve ] && [ "$minimal" = 1 ] && continue
    expect 2 "^ember $c: unknown option --bogus$" "$c" --bogus
done
expect 2 "^ember make-test-model: unexpected argument 'b.gguf'" make-test-model "$tmp/a.gguf" b.gguf
expect 2 "^ember quantize: unknown type 'q1_0': ember writes f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k_s, q3_k_m, q3_k_l, q3_k, q4_k_s, q4_k_m, q4_k, q5_k_s, q5_k_m, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4_moe$" quantize "$model" "$tmp/q.gguf" q1_0
expect 2 "^ember bench: --batching is continuous, static or static-ragged, got 'dynamic'" \
    bench -m "$model" --batching dynamic
expect 2 "^ember bench: --kv is paged or contiguous, got 'flat'" bench -m "$model" --kv flat
expect 2 "^ember bench: --rate is requests per second above 0, or inf; got '0'" bench -m "$model" --rate 0
expect 2 "^ember convert: unknown source format 'hf' \(known: llama2c\)" convert hf a b c
expect 2 "^ember convert: unknown source format 'hf'" convert hf
expect 2 "^ember convert llama2c: wants 3 files" convert llama2c a.bin
expect 2 "^ember: --backend is vulkan or cpu, got 'gpu'" generate -m "$model" --backend gpu
expect 2 "^ember: --kv-type is f32, f16 or q8_0, got 'q4'" generate -m "$model" --kv-type q4
expect 2 "^ember: --type is one of f32, f16, bf16, q4_0, .*, iq4_xs, mxfp4_moe, got 'q1_0'" make-test-model "$tmp/x.gguf" --type q1_0
# wrong types, missing values, missing arguments
expect 2 "^ember: -n wants an integer in \[1, 1048576\], got 'many'" generate -m "$model" -n many
expect 2 "^ember: --temp wants a number, got 'hot'" generate -m "$model" --temp hot
expect 2 "^ember: -p needs a value" generate -m "$model" -p
expect 2 "^ember generate: no model given \(-m MODEL.gguf\)" generate -p hi
expect 2 "^ember chat: no model given" chat
expect 2 "^ember tokenize: no model given" tokenize -p hi
expect 2 "^ember embed: no text given \(-p TEXT\)" embed -m "$model"
expect 2 "^ember embed: --pooling must be mean, cls or last, not 'max'" embed -m "$model" -p hi --pooling max
# embed on the CPU backend: one JSON array a text, of the model's dim (64), unit norm
emb=$("$ember" embed -m "$model" -p hi -p "there you are" --pooling mean --backend cpu 2>&1)
python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin.read().splitlines()]
assert len(rows) == 2 and all(len(r) == 64 and abs(sum(x * x for x in r) - 1) < 1e-5 for r in rows), rows
assert rows[0] != rows[1]' <<<"$emb"
check "embed: two texts, two unit vectors of 64 floats" $?
expect 2 "^ember perplexity: no text given \(-f FILE\)" perplexity -m "$model"
expect 2 "^ember batch: no prompts given \(-f FILE\)" batch -m "$model"
expect 2 "^ember bench: -m MODEL.gguf \(or --url URL\) is required" bench
expect 2 "^ember bench: --top-k samples in the in-process engine; with --url the requests are greedy" \
    bench --url http://127.0.0.1:9 --top-k 40
expect 2 "^ember: --sample-from is auto, candidates or rows, got 'gpu'" generate -m "$model" --sample-from gpu
expect 0 "output_tokens" bench -m "$model" --requests 2 --prompt-len 4:4 --gen-len 3:3 --temp 1 --top-p 0.9 --json
# prefill on one engine, decode on another: every request completes, with all its tokens
expect 0 '"completed": 4, "output_tokens": 20, .*"disaggregated": true' \
    bench -m "$model" --requests 4 --prompt-len 20:40 --gen-len 5:5 --json --disaggregate
# the prefill engine on a device given by number: device 0 loads the model again (as a
# second GPU would); a device that is not there is named; the flag wants --disaggregate
expect 0 '"completed": 4, "output_tokens": 20, .*"disaggregated": true, "prefill_device": "[^"]+", "decode_device"' \
    bench -m "$model" --requests 4 --prompt-len 20:40 --gen-len 5:5 --json --disaggregate --prefill-device 0
expect 1 "^ember: prefill model: --prefill-device 9: device 9 requested, [0-9]+ present" \
    bench -m "$model" --disaggregate --prefill-device 9
expect 2 "^ember bench: --prefill-device goes with --disaggregate" bench -m "$model" --prefill-device 0
expect 2 "^ember bench: --disaggregate hands KV over without a draft model's" \
    bench -m "$model" --disaggregate --draft "$model" --draft-k 2
[ "$minimal" = 1 ] || expect 2 "^ember serve: no model given" serve
expect 2 "^ember make-test-model: no output file given" make-test-model
expect 2 "^ember quantize: wants 3 arguments, IN.gguf OUT.gguf NAME; got 1" quantize --pure "$model"
expect 1 "^ember: $tmp/none.gguf: cannot open: No such file or directory" generate -m "$tmp/none.gguf"
mkdir -p "$tmp/dir"
expect 1 "^ember: $tmp/dir: a directory, not a GGUF file" generate -m "$tmp/dir"
# a llama.cpp mix (Q4_K_M: attn_v and ffn_down Q6_K in some layers, stacked with Q4_K)
# runs on both backends
"$ember" make-test-model "$tmp/mix.gguf" --dim 256 --layers 4 --heads 8 --kv-heads 2 --ffn 512 >/dev/null
"$ember" quantize "$tmp/mix.gguf" "$tmp/q4km.gguf" q4_k_m >/dev/null
expect 0 "2 generated" generate -m "$tmp/q4km.gguf" -n 2
expect 0 "2 generated" generate -m "$tmp/q4km.gguf" -n 2 --backend cpu
expect 1 "^ember: draft model: $tmp/none.gguf: cannot open: No such file" generate -m "$model" --draft "$tmp/none.gguf" --backend cpu
expect 1 "^ember: convert: $tmp/none.bin: cannot open: No such file" convert llama2c "$tmp/none.bin" "$tmp/none.bin" "$tmp/o.gguf"
: >"$tmp/empty.txt"
expect 1 "^ember: $tmp/empty.txt: not a GGUF file: empty" tokenize -m "$tmp/empty.txt" -p hi
expect 1 "^ember quantize: $tmp/none.gguf: cannot open: No such file" quantize "$tmp/none.gguf" "$tmp/q.gguf" q8_0

# ---- perplexity: nothing to score is an error ----------------------------------------------
mkdir -p "$tmp/dir"
expect 1 "^ember perplexity: $tmp/empty.txt is empty: there is no text to score" perplexity -m "$model" -f "$tmp/empty.txt"
expect 1 "^ember perplexity: $tmp/dir is a directory; -f wants a text file" perplexity -m "$model" -f "$tmp/dir"
expect 1 "^ember perplexity: cannot open $tmp/none.txt: No such file" perplexity -m "$model" -f "$tmp/none.txt"

# ---- --logit-bias: a forced token, a ban, and what is refused ------------------------------
expect 0 '"tokens": \[300, 300, 300, 300\]' generate -m "$model" --backend "$backend" -p hi -n 4 --ignore-eos \
    --logit-bias 300+100 --json
expect 0 '"tokens": \[301, 301, 301, 301\]' generate -m "$model" --backend "$backend" -p hi -n 4 --ignore-eos \
    --logit-bias 300=100 --logit-bias 300=-inf --logit-bias 301=90 --json
printf 'hi\n' >"$tmp/one.txt"
expect 0 '"tokens": \[300, 300\]' batch -m "$model" --backend "$backend" -f "$tmp/one.txt" -n 2 --ignore-eos \
    --logit-bias 300=100 --json
expect 2 "^ember: --logit-bias wants TOKEN_ID=BIAS \(or ID\+BIAS, ID-BIAS; BIAS a number or -inf\), got '5'" \
    generate -m "$model" -p hi --logit-bias 5
expect 2 "^ember: --logit-bias wants TOKEN_ID=BIAS .*got '5=\+inf'" generate -m "$model" -p hi --logit-bias 5=+inf
expect 1 "sampler: logit bias for token 99999, past the vocabulary of [0-9]+" \
    generate -m "$model" --backend "$backend" -p hi -n 2 --logit-bias 99999=1

# ---- a KV cache too small: said in the singular when it is one block ----------------------
expect 1 "^ember generate: the KV cache \(1 block of 16 tokens\) could not hold the sequence; --kv-blocks N raises it" \
    generate -m "$model" --backend "$backend" -p hi -n 40 --ignore-eos --kv-blocks 1
expect 1 "^ember: prompt of [0-9]+ tokens needs more than the 1 KV block$" \
    generate -m "$model" --backend "$backend" -p "hi there how are you doing today my friend hello hi there" -n 4 --kv-blocks 1

# ---- devices: EMBER_DEVICE as --device, numbered as ember info numbers them ------------------
if [ "$have_device" = 1 ]; then
    n_dev=$("$ember" info | grep -c "^device [0-9]*:")
    expect 1 "^ember: --device 99: device 99 requested, $n_dev present \(counted from 0\); \`ember info\` lists" \
        generate -m "$model" -n 1 --device 99
    EMBER_DEVICE=99 expect 1 "^ember: EMBER_DEVICE=99: device 99 requested, $n_dev present" generate -m "$model" -n 1
    EMBER_DEVICE=$n_dev expect 1 "^ember: EMBER_DEVICE=$n_dev: device $n_dev requested" generate -m "$model" -n 1
    EMBER_DEVICE=x expect 1 "^ember: EMBER_DEVICE wants an integer in \[0, [0-9]+\], got 'x'" generate -m "$model" -n 1
    EMBER_DEVICE=0 expect 0 "generated" generate -m "$model" -n 2
    # --device wins over EMBER_DEVICE; the CPU backend and tokenize use no device
    EMBER_DEVICE=99 expect 0 "generated" generate -m "$model" -n 2 --device 0
    EMBER_DEVICE=99 expect 0 "generated" generate -m "$model" -n 2 --backend cpu
    EMBER_DEVICE=99 expect 0 "^ +1  ''$" tokenize -m "$model" -p hi
else
    echo "no Vulkan device: the device cases do not apply"
fi

# ---- make-test-model: an absurd size is refused at once -------------------------------------
start=$(date +%s)
# (tensors are made one at a time: the peak is the largest, 2^20 x 2^22, as F32 and as itself)
expect 1 "^ember make-test-model: this model needs 32\.0 TiB of memory to build \(3\.3e\+13 weights as F32\), and this machine has [0-9.]+ [GMT]iB" \
    make-test-model "$tmp/huge.gguf" --dim 1048576 --layers 2 --ffn 4194304
[ $(($(date +%s) - start)) -le 5 ] && [ ! -e "$tmp/huge.gguf" ]; check "refused at once, nothing written" $?

# ---- batch -f ------------------------------------------------------------------------------
expect 1 "^ember batch: cannot open $tmp/none.txt: No such file or directory" batch -m "$model" -f "$tmp/none.txt"
expect 1 "^ember batch: $tmp/dir is a directory; -f wants a file with one prompt per line" batch -m "$model" -f "$tmp/dir"
expect 1 "^ember batch: $tmp/empty.txt is empty; -f wants a file with one prompt per line" batch -m "$model" -f "$tmp/empty.txt"
printf '\n\n\n' >"$tmp/blank.txt"
expect 1 "^ember batch: $tmp/blank.txt holds no prompts \(3 lines, all empty\)" batch -m "$model" -f "$tmp/blank.txt"
long=$(for i in $(seq 80); do printf 'the dog '; done)
printf 'once upon a time\n\n%s\nthe cat\n' "$long" >"$tmp/prompts.txt"
out=$("$ember" batch -m "$model" -f "$tmp/prompts.txt" -n 4 --ignore-eos --backend cpu 2>&1); rc=$?
[ "$rc" -eq 1 ] && grep -qE "^\[1\] error: line 3: prompt of [0-9]+ tokens does not fit the context of 64$" <<<"$out" &&
    grep -qE "^\[0\] .+" <<<"$out" && grep -qE "^\[2\] .+" <<<"$out" && ! grep -qE "^\[[02]\] error" <<<"$out" &&
    grep -q "^ember batch: 1 of 3 prompts refused" <<<"$out"
check "batch: the long prompt names line 3, the others complete, exit 1 ($rc): $out" $?
"$ember" batch -m "$model" -f "$tmp/prompts.txt" -n 4 --ignore-eos --json --backend cpu >"$tmp/batch.json" 2>/dev/null
rc=$?
python3 - "$tmp/batch.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert len(r) == 3, r
assert [x["line"] for x in r] == [1, 3, 4], r
assert "does not fit the context of 64" in r[1]["error"] and r[1]["finish"] == "error" and r[1]["tokens"] == [], r[1]
for x in (r[0], r[2]):
    assert "error" not in x and len(x["tokens"]) == 4 and x["finish"] == "length", x
EOF
[ $? -eq 0 ] && [ "$rc" -eq 1 ]; check "batch --json: the refused entry carries error, the others tokens (exit $rc)" $?

# ---- make-test-model and quantize say what they do (issue 43) -------------------------------
# make-test-model: the path, the shape, the weights' count (2 layers x 36992 + 2 x 32768 + 64
# = 139584), their type and bytes.
out=$("$ember" make-test-model "$tmp/say.gguf" 2>&1)
[ "$out" = "ember make-test-model: wrote $tmp/say.gguf: llama, 2 layers, dim 64, 4/2 heads, FFN 128, vocab 512, context 256; 139584 parameters (0.14M) as F32, 545.2 KiB of tensors (random weights, seed 1)" ]
check "make-test-model says what it wrote: $out" $?
# On a terminal (a pty) it draws a bar as it writes, each tensor named, and clears it at
# 100% before the line above; piped (above) it prints that line alone.
# Not under Wine (EMBER_TEST_NO_TTY): its console draws the bytes its own way.
if [ "${EMBER_TEST_NO_TTY:-0}" = 1 ]; then
    echo "not checked here: make-test-model's bar on a terminal (EMBER_TEST_NO_TTY)"
else
out=$(python3 - "$ember" "$tmp/bar.gguf" <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "make-test-model", sys.argv[2], "--layers", "3"])
seen = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk: break
    seen += chunk
os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace").replace("\r", "<CR>").replace("\x1b", "<ESC>"))
EOF
)
grep -qF "writing [" <<<"$out" && grep -qF "blk.2.ffn_down.weight" <<<"$out" &&
    grep -qF "] 100% " <<<"$out" && grep -qF "<CR><ESC>[Kember make-test-model: wrote $tmp/bar.gguf" <<<"$out"
check "make-test-model on a terminal: a bar naming each tensor, cleared before the summary: ${out:0:300}" $?
fi
# quantize: a line per tensor as llama-quantize prints one ([i/n] name shape: from -> to,
# sizes), then the sizes and bits per weight before and after.
cp "$tmp/say.gguf" "$tmp/say_copy.gguf"
out=$("$ember" quantize "$tmp/say.gguf" "$tmp/say_q8.gguf" q8_0 2>&1); rc=$?
[ $rc -eq 0 ]; check "quantize: exit 0 ($rc)" $?
[ "$(grep -c '^\[[ 0-9]*/21\] ' <<<"$out")" -eq 21 ]; check "quantize: a line per tensor, 21" $?
grep -qxF "[ 1/21] token_embd.weight [64, 512]: F32 -> Q8_0, 128.0 KiB -> 34.0 KiB" <<<"$out"
check "quantize: a converted tensor's line" $?
grep -qxF "[ 2/21] blk.0.attn_norm.weight [64]: F32, 256 bytes (copied)" <<<"$out"; check "quantize: a copied tensor's line" $?
grep -qxF "ember quantize: wrote $tmp/say_q8.gguf: 21 tensors, 16 converted" <<<"$out"; check "quantize: what it wrote" $?
grep -qxF "ember quantize: model size 0.53 MiB (32.00 bits per weight) -> quantized 0.14 MiB (8.55 bits per weight)" <<<"$out"
check "quantize: the sizes and bits per weight: $(tail -1 <<<"$out")" $?
# An existing output is overwritten, as llama-quantize does, and said so.
expect 0 "^ember quantize: $tmp/say_q8.gguf exists: overwriting it$" quantize "$tmp/say.gguf" "$tmp/say_q8.gguf" q8_0
# The input as output, by its name, another spelling, a symbolic and a hard link: refused,
# the input untouched.
ln -s say.gguf "$tmp/say_sym.gguf"
ln "$tmp/say.gguf" "$tmp/say_hard.gguf"
for o in "$tmp/say.gguf" "$tmp/./say.gguf" "$tmp/say_sym.gguf" "$tmp/say_hard.gguf"; do
    expect 1 "^ember quantize: $o is the input $tmp/say.gguf \(the same file\): writing it would destroy the model being read; nothing written$" \
        quantize "$tmp/say.gguf" "$o" q8_0
done
cmp -s "$tmp/say.gguf" "$tmp/say_copy.gguf"; check "quantize onto its input left the input as it was" $?
mkdir -p "$tmp/say_dir"
expect 1 "^ember quantize: $tmp/say_dir is a directory; nothing written$" quantize "$tmp/say.gguf" "$tmp/say_dir" q8_0

# ---- quantize: a Q8_0 input with rows of 172 values (blocks across rows) -------------------
# gguf.py: the test's GGUF v3 surgery: `vocab IN OUT` keeps general.architecture and the
# tokenizer keys and no tensors (a llama.cpp vocab file); `retype IN OUT NAME` marks the
# F16 tensor NAME as Q8_0 in place (its flat Q8_0 blocks take fewer bytes than the F16).
cat >"$tmp/gguf.py" <<'EOF'
import struct, sys
SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(b, pos, t):
    if t == 8:
        return pos + 8 + struct.unpack_from("<Q", b, pos)[0]
    if t == 9:
        at, n = struct.unpack_from("<IQ", b, pos)
        pos += 12
        if at != 8:
            return pos + SIZE[at] * n
        for _ in range(n):
            pos += 8 + struct.unpack_from("<Q", b, pos)[0]
        return pos
    return pos + SIZE[t]
def string(b, pos):
    n = struct.unpack_from("<Q", b, pos)[0]
    return b[pos + 8:pos + 8 + n].decode(), pos + 8 + n
b = bytearray(open(sys.argv[2], "rb").read())
assert b[:4] == b"GGUF" and struct.unpack_from("<I", b, 4)[0] == 3
n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
pos, kvs, types = 24, [], {}
for _ in range(n_kv):
    start = pos
    key, pos = string(b, pos)
    pos = skip(b, pos + 4, struct.unpack_from("<I", b, pos)[0])
    kvs.append((key, bytes(b[start:pos])))
for _ in range(n_tensors):
    name, pos = string(b, pos)
    pos += 4 + 8 * struct.unpack_from("<I", b, pos)[0]
    types[name] = pos
    pos += 12
if sys.argv[1] == "vocab":
    keep = [v for k, v in kvs if k == "general.architecture" or k.startswith("tokenizer.")]
    b = b"GGUF" + struct.pack("<IQQ", 3, 0, len(keep)) + b"".join(keep)
else:
    at = types[sys.argv[4]]
    assert struct.unpack_from("<I", b, at)[0] == 1, "not F16"
    struct.pack_into("<I", b, at, 8)
open(sys.argv[3], "wb").write(b)
EOF
"$ember" make-test-model "$tmp/odd.gguf" --type q8_0 --ffn 172 --seed 4 >/dev/null &&
    python3 "$tmp/gguf.py" retype "$tmp/odd.gguf" "$tmp/odd_q8.gguf" blk.0.ffn_down.weight
check "made a Q8_0 file with rows of 172" $?
expect 1 "^ember: $tmp/odd_q8.gguf: tensor 'blk.0.ffn_down.weight' is Q8_0 with rows of 172 values, not a multiple of 32" \
    generate -m "$tmp/odd_q8.gguf" -n 1 --backend cpu
expect 1 "^ember quantize: $tmp/odd_q8.gguf: tensor 'blk.0.ffn_down.weight' is Q8_0 with rows of 172 values.*\(nothing written\)$" \
    quantize "$tmp/odd_q8.gguf" "$tmp/odd_out.gguf" q8_0
[ ! -e "$tmp/odd_out.gguf" ]; check "quantize wrote nothing for the odd Q8_0 input" $?
# the same model made properly (ffn_down kept F16) quantizes and loads
expect 0 "" quantize "$tmp/odd.gguf" "$tmp/odd_ok.gguf" q8_0
expect 0 "generated" generate -m "$tmp/odd_ok.gguf" -n 2 --backend cpu

# ---- chat: Ctrl-C, the banner, /reset, /exit -------------------------------------------------
"$ember" make-test-model "$tmp/chat.gguf" --ctx 4096 --seed 3 >/dev/null
cat >"$tmp/pty_chat.py" <<'EOF'
# Runs ember chat on a terminal (a pty), sends SIGINT while a reply streams, then at the
# prompt twice; prints what the terminal showed and checks it.
import os, signal, subprocess, sys, time
from chat_pty import ChatPty
ember, model, backend = sys.argv[1:4]
t = ChatPty(ember, model, backend, 4000)
until, p, master = t.until, t.p, t.master
# The line editor draws the prompt once the terminal is in raw mode: lines are typed only
# then, as a user types after seeing it (tests/test_cli_habits.sh).
def prompt_after(mark):
    return lambda s: s[mark:].endswith(b"\x1b[K> ")
fails = []
def expect(ok, what):
    if not ok: fails.append(what)
expect(until(prompt_after(0)), "the first prompt")
expect(b"/exit or Ctrl-D leaves" in t.seen and b"Ctrl-C stops a reply" in t.seen, "the banner says how to leave")
for turn, line in enumerate([b"once upon a time\n", b"tell me more\n"], 1):
    mark = len(t.seen)
    os.write(master, line)
    expect(until(lambda s: len(s) > mark + len(line) + 40), "turn %d: the reply streams" % turn)
    os.kill(p.pid, signal.SIGINT)
    expect(until(lambda s: b"[turn %d:" % turn in s[mark:] and prompt_after(mark)(s)),
           "turn %d: back at the prompt after SIGINT" % turn)
    expect(b"stopped by Ctrl-C]" in t.seen[mark:], "turn %d: the turn line says it was stopped" % turn)
    expect(p.poll() is None, "turn %d: still running after SIGINT" % turn)
# A Ctrl-C sent the moment the prompt shows lands between the editor's drawing and its
# read: none may be lost. Each round: one SIGINT (the hint, the prompt again), then /reset
# so that the next one is a first again.
hint = b"Ctrl-C again, Ctrl-D or /exit leaves"
for r in range(20):
    mark = len(t.seen)
    os.kill(p.pid, signal.SIGINT)
    ok = until(lambda s: hint in s[mark:] and prompt_after(mark)(s), 60)
    expect(ok, "SIGINT at the prompt, round %d: the hint, then the prompt" % r)
    if not ok: break
    if r == 19: break
    mark = len(t.seen)
    os.write(master, b"/reset\n")
    expect(until(lambda s: b"[a new conversation]" in s[mark:] and prompt_after(mark)(s), 60), "/reset, round %d" % r)
# Back at the prompt, it reads: still running, and a second SIGINT leaves.
expect(p.poll() is None, "still running after one SIGINT at the prompt")
os.kill(p.pid, signal.SIGINT)
rc = t.exit_status(20)
expect(rc == 0, "a second SIGINT at the prompt leaves with 0 (got %s)" % rc)
until(lambda s: False, 0.2)
print(t.seen.decode(errors="replace")[-1500:])
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
EOF
# EMBER_TEST_NO_TTY=1: ember is a Windows program under Wine (tests/CMakeLists.txt), which
# a Unix terminal and its signals do not reach as a Windows console and Ctrl-C.
if [ "${EMBER_TEST_NO_TTY:-0}" = 1 ]; then
    echo "not checked here: chat on a terminal (EMBER_TEST_NO_TTY: no Unix terminal reaches ember)"
else
    PYTHONPATH="$root/tests" python3 "$tmp/pty_chat.py" "$ember" "$tmp/chat.gguf" "$backend"
    check "chat on a terminal: SIGINT stops a reply and the chat goes on" $?
fi
# Piped, a context of 64 tokens: the conversation goes on past it. Each line is answered;
# a reply that reaches the context's end says so, and the next turn drops the oldest
# one, in one line; /reset starts over, /exit leaves without reading what follows.
# A line too long for the context even alone is not sent, and the chat goes on.
printf 'once upon a time\nthe dog ran\nthe dog ran and ran and ran and ran and ran and then it ran home\nand then\n/reset\nhello\n/exit\nnever read\n' |
    "$ember" chat -m "$model" -n 20 --backend cpu >"$tmp/chat.out" 2>"$tmp/chat.err"
rc=$?
cat "$tmp/chat.err"
grep -qE "^\[not sent: the last turn alone takes [0-9]+ tokens: it does not fit the context of 64; the conversation goes on without it\]$" "$tmp/chat.err"
check "chat: a line longer than the context is not sent, and says why" $?
[ "$rc" -eq 0 ] && [ "$(grep -cE '^\[turn [0-9]+: [0-9]+ prompt tokens, [0-9]+ from cache, [1-9][0-9]* generated' "$tmp/chat.err")" -eq 4 ]
check "chat: past the context every line is answered (4 turns), exit 0 (exit $rc)" $?
grep -qE "^\[turn 1: .*; cut at the end of the context\]$" "$tmp/chat.err"
check "chat: a reply cut by the context's end says so" $?
[ "$(grep -c '^\[dropped the oldest turn to fit the context of 64 tokens\]$' "$tmp/chat.err")" -eq 2 ]
check "chat: turns 2 and 3 each drop the oldest turn, in one line" $?
grep -A1 "^\[a new conversation\]" "$tmp/chat.err" | grep -qE "^\[turn 4: [0-9]+ prompt tokens, [0-9]+ from cache, [1-9]"
check "chat: /reset, then a reply" $?
# --overflow refuse: the old rule. The first line leaves less than -n for the reply:
# refused with the numbers and the offer; later lines get the offer until /reset.
printf 'once upon a time\nthe dog ran\n/reset\n/exit\n' |
    "$ember" chat -m "$model" -n 20 --overflow refuse --backend cpu >"$tmp/chat.out" 2>"$tmp/chat.err"
rc=$?
cat "$tmp/chat.err"
[ "$rc" -eq 0 ] && grep -qE "^\[the context is full: the conversation \([0-9]+ tokens\) and the 20 tokens kept for the reply do not fit the context of 64; /reset starts a new conversation, /exit leaves\]$" "$tmp/chat.err"
check "chat --overflow refuse: a full context says so with the numbers and offers /reset, exit 0 (exit $rc)" $?
[ "$(grep -c '^\[the context is full: /reset starts a new conversation, /exit leaves\]$' "$tmp/chat.err")" -eq 1 ] &&
    ! grep -q '^\[turn ' "$tmp/chat.err"
check "chat --overflow refuse: the next line gets the offer, nothing is generated" $?
expect 2 "^ember chat: --overflow is drop or refuse, got 'rotate'" chat -m "$model" --overflow rotate
# A KV pool smaller than the context (--kv-blocks 3: 48 tokens, one block kept spare) is
# what the conversation is fitted to.
out=$(printf 'once upon a time\n' | "$ember" chat -m "$model" --kv-blocks 3 -n 4 --backend cpu 2>&1); rc=$?
[ "$rc" -eq 0 ] && grep -qE "^\[not sent: the last turn alone takes [0-9]+ tokens: it does not fit the context of 32;" <<<"$out"
check "chat --kv-blocks 3: the conversation is fitted to the pool (32 tokens), exit 0 (exit $rc)" $?

# ---- scripts/get-model.sh -----------------------------------------------------------------
for arg in "" --help; do
    out=$(EMBER_CACHE="$tmp/cache" bash "$root/scripts/get-model.sh" $arg 2>&1); rc=$?
    [ "$rc" -eq 0 ] && grep -q "^known models" <<<"$out" && grep -q "^  smollm2-135m " <<<"$out"
    check "get-model.sh $arg: lists the models, exit 0 (exit $rc)" $?
done

# ---- tokenize: a vocabulary-only GGUF -------------------------------------------------------
stories=$shared/models/stories260K/stories260K-f32.v3.gguf
if [ -f "$stories" ]; then
    python3 "$tmp/gguf.py" vocab "$stories" "$tmp/vocab.gguf"; check "made a vocabulary-only GGUF" $?
    text="Once upon a time, Lily saw a big dog."
    want=$("$ember" tokenize -m "$stories" -p "$text" --json 2>&1)
    got=$("$ember" tokenize -m "$tmp/vocab.gguf" -p "$text" --json 2>&1); rc=$?
    echo "tokenize: model $want; vocabulary-only $got"
    [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && grep -qE '^\{"tokens": \[1, [0-9]+' <<<"$got"
    check "tokenize: the vocabulary-only file gives the model's ids" $?
    expect 1 "^ember: $tmp/vocab.gguf is a vocabulary-only file \(no weights\)" generate -m "$tmp/vocab.gguf" -n 1
    llama=$shared/testdata/tokenizer/llama-spm/llama2-spm-vocab.v3.gguf
    [ -f "$llama" ] && expect 0 '^\{"tokens": \[1, 306, 4658, 278, 6593, 310, 2834, 338\]\}$' \
        tokenize -m "$llama" -p "I believe the meaning of life is" --json
else
    echo "note: ../shared is absent: the vocabulary-only cases were not run"
fi

echo "test_cli_messages: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
