#!/usr/bin/env bash
# `ember chat`'s /save and /load (tools/chat_file.c, ember_chat_save / ember_chat_load,
# docs/state.md): a conversation saved in one process continues in another with exactly
# the reply the first process gives (greedy), its earlier turns restored from the file's
# KV cache instead of computed; a changed file, a cut one and one saved for another
# model are refused with a message, and the chat goes on.
set -uo pipefail
ember=${EMBER_BIN:?EMBER_BIN: the ember program}
root=${EMBER_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d "${EMBER_TEST_TMP:-/tmp}/chat_save.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # NAME STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
tmpl=$root/tests/data/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja
make() { "$ember" make-test-model "$1" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 512 \
    --chat-template "$tmpl" --seed "$2" >/dev/null; }
make "$tmp/m.gguf" 3 || { echo "FAIL: make-test-model"; exit 1; }
make "$tmp/other.gguf" 4
chat() { "$ember" chat -m "$1" --temp 0 -n 12 --kv-blocks 64; }

# one process: two turns, saved after the first
printf 'hello there\n/save %s\nhow are you\n' "$tmp/c.chat" | chat "$tmp/m.gguf" >"$tmp/a.out" 2>"$tmp/a.err"
check "the first process runs two turns and saves: $(cat "$tmp/a.err")" $?
grep -q "^\[saved to $tmp/c.chat: [0-9]* tokens and their KV cache" "$tmp/a.err"; check "it says what it saved" $?
# another process: load, then the second turn
printf '/load %s\nhow are you\n' "$tmp/c.chat" | chat "$tmp/m.gguf" >"$tmp/b.out" 2>"$tmp/b.err"
check "the second process loads and answers: $(cat "$tmp/b.err")" $?
saved=$(sed -n 's/^\[saved to .*: \([0-9]*\) tokens.*/\1/p' "$tmp/a.err")
grep -q "^\[turn 1: [0-9]* prompt tokens, 0 from cache, $saved restored" "$tmp/b.err"
check "the loaded turns are restored ($saved tokens), not computed: $(grep turn "$tmp/b.err")" $?
# the reply of the second turn is the last lines of a.out: b.out must be its ending
python3 - "$tmp/a.out" "$tmp/b.out" <<'PY'
import sys
a, b = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
sys.exit(0 if b and a.endswith(b) and len(b) < len(a) else 1)
PY
check "the second process's reply equals the first's second reply" $?

# refusals: the chat goes on after each
cp "$tmp/c.chat" "$tmp/bad.chat"
printf '\x41' | dd of="$tmp/bad.chat" bs=1 seek=300 conv=notrunc 2>/dev/null
head -c 100 "$tmp/c.chat" >"$tmp/cut.chat"
printf 'hi\n/save %s\n' "$tmp/o.chat" | chat "$tmp/other.gguf" >/dev/null 2>&1
for f in bad cut o; do
    printf '/load %s\nhello there\n' "$tmp/$f.chat" | chat "$tmp/m.gguf" >"$tmp/r.out" 2>"$tmp/r.err"
    rc=$?
    case $f in
        bad | cut) want="checksum does not match" ;;
        o) want="another model" ;;
    esac
    grep -q "$want" "$tmp/r.err" && grep -q "^\[turn 1:" "$tmp/r.err" && [ $rc -eq 0 ]
    check "$f.chat refused ($want), the chat goes on: $(head -c 300 "$tmp/r.err")" $?
done
printf '/load\n/save\n' | chat "$tmp/m.gguf" >/dev/null 2>"$tmp/n.err"
[ "$(grep -c "need a file" "$tmp/n.err")" -eq 2 ]; check "/load and /save without a file say so" $?

echo "test_chat_save: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
