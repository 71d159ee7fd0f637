#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets (fuzz/fuzz_<name>.c) under OUT/<name>/ (<name>: gguf, tokenizer_spm, ...).
#   scripts/fuzz-seeds.sh OUT
# Nothing here is committed: the seeds are made from small hand-written cases, from
# ../shared/testdata when it is there, from GGUF files written by a few lines of Python
# (vocabulary-only files, a chat template, version 1), and from `ember make-test-model`
# when an ember program is found ($EMBER_BIN, else build/ember). Every file is small
# (the largest, a model, is about 20 KB). Used by scripts/fuzz.sh and by
# tests/test_fuzz_regressions.sh.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
cd "$(dirname "$0")/.."
out=$1
shared=${EMBER_SHARED:-../shared}
rm -rf "$out"
mkdir -p "$out"/{gguf,tokenizer_spm,tokenizer_bpe,chat_template,server_request,jinja,kv_state}

# ---- texts for both tokenizers: a mode byte, then the text (util.c, fuzz_tokenizer_*.c) ----
texts=(
  "Hello world" " the   lll xyz" "a  b\tc\n\nd" "<s>ab</s> <tool> <|im_end|> <|im_start|>user"
  $'caf\xc3\xa9 \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80' $'\xff\xfe bad \xc3 \xe2\x96 \x80' "12345 67 it's we'll"
  $'\xe2\x96\x81ab\xe2\x96\x81\xe2\x96\x81' ""
)
i=0
for t in "${texts[@]}"; do
  for mode in 0 2 4 6 8 16 24 32 40; do  # flags, and for BPE the pre-tokenizer
    printf "\\x$(printf %02x $mode)%s" "$t" > "$out/tokenizer_bpe/text-$i-$mode"
  done
  for mode in 0 2 4 6; do
    printf "\\x$(printf %02x $mode)%s" "$t" > "$out/tokenizer_spm/text-$i-$mode"
  done
  i=$((i + 1))
done
# llama.cpp's test texts (../shared), one seed each.
for inp in "$shared"/testdata/tokenizer/*/*.inp; do
  [ -f "$inp" ] || continue
  python3 - "$inp" "$out" <<'PY'
import os, sys
inp, out = sys.argv[1], sys.argv[2]
cases = open(inp, 'rb').read().split(b'\n__ggml_vocab_test__\n')
name = os.path.basename(os.path.dirname(inp))
for k, c in enumerate(cases[:48]):
    for tgt in ('tokenizer_spm', 'tokenizer_bpe'):
        open(f'{out}/{tgt}/{name}-{k}', 'wb').write(b'\x00' + c)
PY
done
# Ids: mode bit 0 set, then little-endian 16-bit ids (byte tokens, pieces, specials).
python3 - "$out" <<'PY'
import struct, sys
out = sys.argv[1]
seqs = {'bytes': [3 + 0xe4, 3 + 0xb8, 3 + 0x96, 3 + 0x41, 3 + 0xff, 3 + 0xc3],
        'spm': [1, 259, 260, 267, 274, 0, 2, 280, 281, 65535],
        'bpe': [0xe4, 0xb8, 0x96, 256, 258, 268, 270, 271, 272, 0x80, 0xc3, 1000]}
for name, ids in seqs.items():
    data = b''.join(struct.pack('<H', i) for i in ids)
    for tgt in ('tokenizer_spm', 'tokenizer_bpe'):
        open(f'{out}/{tgt}/ids-{name}', 'wb').write(b'\x01' + data)
PY

# ---- chat templates: flags, from, then NUL-separated template, bos, eos, messages ----
python3 - "$out/chat_template" <<'PY'
import sys
out = sys.argv[1]
jinja = {
  'chatml': "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}",
  'qwen': "{%- if messages[0]['role'] != 'system' %}{{- '<|im_start|>system\\nYou are Qwen, a helpful assistant.<|im_end|>\\n' }}{%- endif %}<|im_start|>",
  'llama2': "{{ bos_token }}[INST] <<SYS>>\\n{{ system }}\\n<</SYS>>\\n\\n{{ user }} [/INST]",
  'llama3': "<|start_header_id|>{{ role }}<|end_header_id|>\\n\\n{{ content | trim }}<|eot_id|>",
  'llama31': "<|start_header_id|>system<|end_header_id|>Cutting Knowledge Date: December 2023<|end_header_id|>",
  'mistral': "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}",
  'zephyr': "<|user|>\\n{{ content }}</s>\\n<|assistant|>",
  'phi3': "<|user|>\\n{{ content }}<|end|>\\n<|assistant|>",
  'gemma': "<start_of_turn>user\\n{{ content }}<end_of_turn>\\n",
  'phi4': "<|im_start|>user<|im_sep|>{{ content }}<|im_end|>",
}
convs = [
  [(0, b'You are terse.'), (1, b'Hello'), (2, b' Hi there '), (1, b'Bye')],
  [(1, b'  padded  '), (2, b'\n'), (1, b'')],
  [(3, b'dev says'), (1, b'x'), (0, b'late system')],
  [(1, b'caf\xc3\xa9 \xff')],
  [],
]
k = 0
for name, src in jinja.items():
    for ci, conv in enumerate(convs):
        for flags, frm in ((1, 0), (0, 2), (1, 3)):
            fields = [src.encode(), b'<s>', b'</s>'] + [bytes([r]) + c for r, c in conv]
            open(f'{out}/{name}-{ci}-{flags}{frm}', 'wb').write(bytes([flags, frm]) + b'\0'.join(fields))
for name in ('chatml', 'llama2', 'llama3', 'llama3.1', 'mistral', 'zephyr', 'gemma', 'phi3', 'vicuna'):
    fields = [name.encode(), b'<|begin_of_text|>', b'<|end_of_text|>', b'\0sys', b'\1user', b'\2reply']
    open(f'{out}/name-{name}', 'wb').write(bytes([3, 1]) + b'\0'.join(fields))
PY

# ---- Jinja templates: the real chat templates of tests/data, and small constructs ----
cp tests/data/chat_templates/*.jinja "$out/jinja/"
jt() { printf '%s' "$2" > "$out/jinja/$1"; }
jt loops '{% for m in messages if m.content %}{{ loop.index }}{{ m.role | upper }}{% else %}-{% endfor %}'
jt macro '{% macro f(a, b=2) %}{{ a ~ b }}{{ caller() if caller }}{% endmacro %}{% call f(1) %}x{% endcall %}{{ f(3, b=4) }}'
jt filters "{{ tools | tojson(indent=2) }}{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(', ') }}"
jt slices "{{ messages[::-1] | length }}{{ 'abc'[1:] }}{{ range(10)[2:8:3] }}{% set ns = namespace(x=1) %}{% set ns.x = ns.x * 2 %}{{ ns.x }}"
jt ws $'  {%- if true -%}\n  a  {#- c -#}\n{{- " b " -}}\n{% endif %}\n'

# ---- request bodies: kind byte (bit 0 completion; bits 1-3 template), then the JSON ----
req() { printf "\\x$1%s" "$3" > "$out/server_request/$2"; }
req 00 chat-min '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":32}'
req 02 chat-full '{"model":"stories260K","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]},{"role":"assistant","content":"Yes?"},{"role":"developer","content":"d"}],"temperature":0.7,"top_p":0.9,"top_k":40,"min_p":0.05,"repetition_penalty":1.1,"presence_penalty":0.5,"frequency_penalty":-0.5,"seed":42,"n":1,"max_completion_tokens":16,"stop":["\n","END"],"stream":true,"stream_options":{"include_usage":true},"ignore_eos":false}'
req 04 chat-bad-role '{"messages":[{"role":"tool","content":"x"}]}'
req 06 chat-nulls '{"messages":[{"role":"user","content":"a\u0000b \ud83d\ude00 \u00e9"}],"temperature":null,"stop":null,"model":null}'
req 08 chat-wrong-model '{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}'
req 0a chat-llama2 '{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"system","content":"late"}]}'
req 01 completion-text '{"prompt":"Once upon a time","max_tokens":32,"stream":true}'
req 01 completion-array '{"prompt":["Once"],"max_tokens":1,"stop":"x","seed":-5}'
req 01 completion-ids '{"prompt":[1,2,3,511],"max_tokens":512,"temperature":2}'
req 01 completion-bad '{"prompt":[1,2.5,-1,512],"max_tokens":0,"n":2,"top_p":1.5}'
req 01 completion-stops '{"prompt":"x","stop":["a","b","c","d","e"]}'
req 00 not-json '{"messages":[{"role":"user","content":"x"}'
req 01 not-object '[1,2,3]'
req 10 embed-text '{"model":"stories260K","input":"Once upon a time"}'
req 10 embed-texts '{"input":["a","b \u00e9"],"encoding_format":"base64","dimensions":8,"user":"u"}'
req 10 embed-ids '{"input":[1,2,3,511],"encoding_format":"float"}'
req 10 embed-id-lists '{"input":[[1,2],[3]],"dimensions":null}'
req 10 embed-bad '{"input":[[1,2],"a",[]],"encoding_format":"hex","dimensions":4}'

# ---- GGUF files: hand-made vocabularies and templates, then tiny models ----
python3 - "$out/gguf" <<'PY'
import struct, sys
out = sys.argv[1]
U32, I32, F32, BOOL, STR, ARR, U64 = 4, 5, 6, 7, 8, 9, 10
def s(x, n=8):
    x = x.encode() if isinstance(x, str) else x
    return struct.pack('<Q' if n == 8 else '<I', len(x)) + x
def val(t, v, n):
    if t == U32: return struct.pack('<I', v)
    if t == I32: return struct.pack('<i', v)
    if t == F32: return struct.pack('<f', v)
    if t == BOOL: return bytes([v])
    if t == U64: return struct.pack('<Q', v)
    if t == STR: return s(v, n)
    et, items = v
    return struct.pack('<I', et) + (struct.pack('<Q' if n == 8 else '<I', len(items))) + b''.join(val(et, i, n) for i in items)
def gguf(kvs, version=3, tensors=()):
    n = 8 if version > 1 else 4
    cnt = '<Q' if n == 8 else '<I'
    b = b'GGUF' + struct.pack('<I', version) + struct.pack(cnt, len(tensors)) + struct.pack(cnt, len(kvs))
    for k, t, v in kvs:
        b += s(k, n) + struct.pack('<I', t) + val(t, v, n)
    data = b''
    for name, ne, typ, raw in tensors:
        b += s(name, n) + struct.pack('<I', len(ne)) + b''.join(struct.pack(cnt, d) for d in ne)
        b += struct.pack('<I', typ) + struct.pack('<Q', len(data))
        data += raw + b'\0' * (-len(raw) % 32)
    b += b'\0' * (-len(b) % 32)
    return b + data
def gpt2_chars():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(0xa1, 0xad)) + list(range(0xae, 0x100))
    cs, extra = {}, 0
    for b in range(256):
        if b in bs: cs[b] = chr(b)
        else: cs[b] = chr(256 + extra); extra += 1
    return [cs[b] for b in range(256)]
chars = gpt2_chars()
bpe_tokens = chars + ['\u0120t', 'he', '\u0120the', '<|endoftext|>', '<|im_start|>', '<|im_end|>', '<tool>']
bpe_types = [1] * 259 + [3, 3, 3, 4]
chatml = "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}"
bpe = [('general.architecture', STR, 'llama'), ('tokenizer.ggml.model', STR, 'gpt2'),
       ('tokenizer.ggml.pre', STR, 'llama-bpe'), ('tokenizer.ggml.tokens', ARR, (STR, bpe_tokens)),
       ('tokenizer.ggml.token_type', ARR, (I32, bpe_types)),
       ('tokenizer.ggml.merges', ARR, (STR, ['\u0120 t', 'h e', '\u0120t he'])),
       ('tokenizer.ggml.eos_token_id', U32, 261), ('tokenizer.ggml.add_bos_token', BOOL, 1),
       ('tokenizer.chat_template', STR, chatml)]
open(f'{out}/vocab-bpe.gguf', 'wb').write(gguf(bpe))
spm_tokens = ['<unk>', '<s>', '</s>'] + ['<0x%02X>' % b for b in range(256)] + ['\u2581', 'a', 'b', 'ab', '\u2581ab']
spm = [('general.architecture', STR, 'llama'), ('tokenizer.ggml.model', STR, 'llama'),
       ('tokenizer.ggml.tokens', ARR, (STR, spm_tokens)),
       ('tokenizer.ggml.scores', ARR, (F32, [0.0] * 259 + [-1.0, -2.0, -2.0, -1.5, -3.0])),
       ('tokenizer.ggml.token_type', ARR, (I32, [2, 3, 3] + [6] * 256 + [1] * 5)),
       ('tokenizer.ggml.bos_token_id', U32, 1), ('tokenizer.ggml.eos_token_id', U32, 2),
       ('tokenizer.chat_template', STR, '{{ bos_token }}[INST] <<SYS>>\\n{{ s }}<</SYS>> [/INST]')]
open(f'{out}/vocab-spm.gguf', 'wb').write(gguf(spm))
open(f'{out}/vocab-spm-v1.gguf', 'wb').write(gguf(spm, version=1))
# A llama description with one tensor of each accepted type and a rope_freqs table.
tensors = [('token_embd.weight', [32, 4], 0, b'\x01' * (32 * 4 * 4)), ('output_norm.weight', [32], 0, struct.pack('<32f', *([1.0] * 32))),
           ('rope_freqs.weight', [4], 0, struct.pack('<4f', 1, 2, 4, 8)), ('q8.weight', [32, 1], 8, b'\x00\x3c' + bytes(range(32))),
           ('f16.weight', [2, 2, 1, 1], 1, b'\x00\x3c' * 4)]
meta = [('general.architecture', STR, 'llama'), ('general.alignment', U32, 32), ('llama.embedding_length', U32, 32),
        ('llama.block_count', U32, 1), ('llama.feed_forward_length', U32, 64), ('llama.attention.head_count', U32, 4),
        ('llama.context_length', U32, 64), ('llama.rope.freq_base', F32, 10000.0), ('odd.u64', U64, 7)]
open(f'{out}/tensors.gguf', 'wb').write(gguf(meta, tensors=tensors))
open(f'{out}/empty-v2.gguf', 'wb').write(gguf([], version=2))
PY
ember=${EMBER_BIN:-build/ember}
if [ -x "$ember" ]; then
  m=(--dim 8 --layers 1 --heads 2 --kv-heads 1 --ffn 16 --vocab 264 --ctx 16)
  "$ember" make-test-model "$out/gguf/model-f32.gguf" "${m[@]}" >/dev/null
  "$ember" make-test-model "$out/gguf/model-qwen2.gguf" "${m[@]}" --type f16 --arch qwen2 --tied >/dev/null
  "$ember" make-test-model "$out/gguf/model-llama-freqs.gguf" "${m[@]}" --type f16 --rope-freqs >/dev/null
  "$ember" make-test-model "$out/gguf/model-phi3.gguf" "${m[@]}" --arch phi3 --longrope --orig-ctx 8 >/dev/null
  "$ember" make-test-model "$out/gguf/model-gemma3.gguf" "${m[@]}" --arch gemma3 --head-dim 8 \
    --key attention.sliding_window=4 >/dev/null
  "$ember" make-test-model "$out/gguf/model-q8_0.gguf" --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 32 \
    --vocab 264 --ctx 16 --type q8_0 --rope-scale 2 >/dev/null
else
  echo "fuzz-seeds: no ember program ($ember): no model seeds for fuzz_gguf" >&2
fi
# ---- KV states (fuzz_kv_state.c): byte 0 odd makes a valid state from bytes 1-3 and
# damages it as byte 4 says; even reads the rest as a state as it is ----
for t in 0 1 2; do
  for damage in 0 1 2 3; do
    printf "\\x01\\x$(printf %02x $t)\\x0b\\x07\\x0$damage\\x35\\x00\\x04state rows %s" "$t$damage" \
      > "$out/kv_state/made-$t-$damage"
  done
done
printf '\x00EMBERKVS\x01\x00\x00\x00' > "$out/kv_state/header-only"
printf '\x00not a state at all' > "$out/kv_state/not-a-state"
for d in "$out"/*/; do echo "$(basename "$d") $(ls "$d" | wc -l)"; done
