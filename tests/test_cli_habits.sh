#!/usr/bin/env bash
# test_cli_habits.sh — what a llama.cpp user types works (docs/coming-from-llama.md):
#  - generate -c N: prompt and reply together fill N tokens and the reply ends there
#    ("finish": "context"); -c past the model's context is capped with a note; chat -c N
#    fits the conversation to N tokens;
#  - -t N is accepted with a note saying Vulkan needs no thread count, the output unchanged;
#  - every --help of generate, chat, perplexity, batch, bench, embed and info shows the defaults,
#    greedy included;
#  - perplexity prints the running value per window as llama-perplexity does ([1]X,[2]Y,),
#    the last equal to the final figure; --method llama and ember, named in --json;
#  - chat: an unknown /command gets the list of commands and is not sent; "//x" sends "/x";
#  - chat on a terminal (a pty from Python): arrows, Home/End, Backspace and Up edit the
#    line, and the conversation saved with /save holds the edited lines.
set -uo pipefail
ember=${EMBER_BIN:?EMBER_BIN: the ember program}
root=${EMBER_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d "${EMBER_TEST_TMP:-/tmp}/cli_habits.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # NAME STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; } # EXPR of d

model=$tmp/m.gguf
"$ember" make-test-model "$model" --ctx 256 --seed 2 >/dev/null || { echo "FAIL: make-test-model"; exit 1; }
backend=cpu
"$ember" info 2>/dev/null | grep -q "^device 0:" && backend=vulkan

# ---- -c / --ctx-size ------------------------------------------------------------------------
out=$("$ember" generate -m "$model" --backend $backend -p "once upon a time" -n 200 -c 32 --ignore-eos --json 2>"$tmp/err")
rc=$?; check "generate -c 32 runs (exit $rc): $(head -c 300 "$tmp/err")" $rc
got=$(json 'd["n_prompt"] + d["n_gen"], d["finish"]' <<<"$out" 2>&1)
[ "$got" = "32 context" ]; check "generate -c 32: prompt + reply = 32 tokens, finish context (got $got)" $?
out=$("$ember" generate -m "$model" --backend $backend -p "once upon a time" -n 20 --ctx-size 1000 --ignore-eos --json 2>"$tmp/err")
grep -qx "ember generate: a context of 1000 tokens is past the model's 256: using 256" "$tmp/err" &&
    [ "$(json 'd["n_gen"]' <<<"$out")" = 20 ]
rc=$?; check "generate --ctx-size 1000: capped at the model's 256 with a note, 20 tokens ($(head -c 300 "$tmp/err"))" $rc
out=$("$ember" generate -m "$model" --backend $backend -p "$(printf 'once upon a time %.0s' {1..20})" -c 16 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "^ember generate: the prompt is [0-9]* tokens: it leaves no room in the context of 16 (-c)$" <<<"$out"
check "generate -c 16 with a longer prompt: refused with the numbers, exit 1 (exit $rc: $out)" $?
printf 'once upon a time\nthere was a cat\nand a dog\n/exit\n' |
    "$ember" chat -m "$model" --backend $backend -n 8 -c 128 >/dev/null 2>"$tmp/err"
check "chat -c 128 runs (exit $?)" $?
grep -q "^\[dropped the oldest turn to fit the context of 128 tokens\]$" "$tmp/err"
rc=$?; check "chat -c 128: the conversation is fitted to 128 tokens ($(grep -v '^\[turn' "$tmp/err" | head -c 300))" $rc

# ---- -t / --threads -------------------------------------------------------------------------
base=$("$ember" generate -m "$model" --backend $backend -p "once upon a time" -n 8 --json 2>/dev/null | json 'd["tokens"]')
with=$("$ember" generate -m "$model" --backend $backend -p "once upon a time" -n 8 -t 8 --json 2>"$tmp/err" | json 'd["tokens"]')
[ -n "$base" ] && [ "$base" = "$with" ]; check "generate -t 8: the same tokens as without ($base / $with)" $?
grep -qx "ember generate: -t 8 ignored: the model runs on the Vulkan device, which needs no thread count (on lavapipe, Mesa's CPU driver, LP_NUM_THREADS=N sets its threads)" "$tmp/err"
rc=$?; check "generate -t 8: the note ($(head -c 300 "$tmp/err"))" $rc
"$ember" perplexity -m "$model" -f "$root/bench/data/story.txt" --threads 2 --json >/dev/null 2>"$tmp/err"
grep -q "^ember perplexity: --threads 2 ignored" "$tmp/err"; check "perplexity --threads 2: accepted with the note" $?
"$ember" generate -m "$model" -t many >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -qx "ember: -t wants an integer in \[-1, 65536\], got 'many'" "$tmp/err"
rc=$?; check "generate -t many: a usage error naming -t ($(head -1 "$tmp/err"))" $rc

# ---- defaults in --help -----------------------------------------------------------------------
for c in generate chat perplexity batch bench embed info; do "$ember" "$c" --help >"$tmp/$c.help"; done
grep -qF "sampling (default: greedy, the most likely token each step; --temp above 0 samples):" "$tmp/generate.help" &&
    grep -qF -- "-n N                  tokens to generate at most (default 64)" "$tmp/generate.help" &&
    grep -qF -- "-c, --ctx-size N      the context: prompt and reply together (default 0: the model's);" "$tmp/generate.help" &&
    grep -qF -- "--kv-type f32|f16|q8_0 (default f32)" "$tmp/generate.help"
check "generate --help shows the defaults" $?
grep -qF "sampling (default: greedy" "$tmp/chat.help" && grep -qF -- "tokens per reply at most (default 256)" "$tmp/chat.help" &&
    grep -qF -- "(default drop)" "$tmp/chat.help"
check "chat --help shows the defaults" $?
grep -qF -- "--method ember|llama  ember (default)" "$tmp/perplexity.help" &&
    grep -qF -- "(default: ember, the model's context; llama, 512," "$tmp/perplexity.help"
check "perplexity --help shows the defaults" $?
grep -qF "sampling (default: greedy" "$tmp/batch.help" &&
    grep -qF -- "defaults: -n 64 tokens a reply, --max-seqs 16 served at once, --kv-type f32," "$tmp/batch.help"
check "batch --help shows the defaults" $?
grep -qF -- "--requests N          requests in all (default 48)" "$tmp/bench.help" &&
    grep -qF -- "--max-batch-tokens T  tokens a step (default 256)" "$tmp/bench.help" &&
    grep -qF -- "--slo-tpot-ms Y       goodput's TPOT target (default 500)" "$tmp/bench.help" &&
    grep -qF -- "(default: the server's vocab_size, else 256)" "$tmp/bench.help"
check "bench --help shows the defaults" $?
grep -qF -- "--pooling mean|cls|last  (default: as the model declares" "$tmp/embed.help" &&
    grep -qF -- "--backend vulkan|cpu  (default vulkan)" "$tmp/embed.help"
check "embed --help shows the defaults" $?
grep -qF -- "defaults: --ctx the model's context, --kv-type f32, --max-batch-tokens 256, no --budget" "$tmp/info.help"
check "info --help shows the defaults" $?

# ---- perplexity: per-window values, methods -----------------------------------------------------
"$ember" perplexity -m "$model" --backend $backend -f "$root/bench/data/story.txt" -c 64 --method llama >"$tmp/ppl" 2>"$tmp/err"
check "perplexity --method llama -c 64 runs (exit $?)" $?
head -1 "$tmp/ppl" | grep -qE '^(\[[0-9]+\][0-9]+\.[0-9]{4},)+$'
rc=$?; check "perplexity: the first stdout line is [1]X,[2]Y,... ($(head -c 200 "$tmp/ppl"))" $rc
last=$(head -1 "$tmp/ppl" | grep -oE '[0-9.]+,$' | tr -d ,)
final=$(sed -n '2s/.* perplexity \([0-9.]*\) (llama method, windows of 64)$/\1/p' "$tmp/ppl")
[ -n "$last" ] && [ "$last" = "$final" ]; check "perplexity: the last running value ($last) is the final figure ($final)" $?
grep -qE "^perplexity: [0-9]+\.[0-9]{2} seconds per pass - ETA [0-9]+\.[0-9]{2} minutes$" "$tmp/err"
rc=$?; check "perplexity: the ETA line on stderr ($(head -c 300 "$tmp/err"))" $rc
out=$("$ember" perplexity -m "$model" --backend $backend -f "$root/bench/data/story.txt" -c 64 --json 2>/dev/null)
got=$(json 'd["method"], d["ctx"], len(d["chunks"]), d["chunks"][-1] == d["perplexity"]' <<<"$out" 2>&1)
[ "$got" = "ember 64 $(( ($(json 'd["tokens"]' <<<"$out") + 63) / 64 )) True" ]
check "perplexity --json: method ember, ctx, one running value per window, the last the figure ($got)" $?
"$ember" perplexity -m "$model" -f "$root/bench/data/story.txt" --method kld >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -qx "ember perplexity: --method is ember or llama, got 'kld'" "$tmp/err"
rc=$?; check "perplexity --method kld: a usage error ($(head -1 "$tmp/err"))" $rc
printf 'once upon a time there was a cat\n' >"$tmp/short.txt"
"$ember" perplexity -m "$model" --backend $backend -f "$tmp/short.txt" --method llama -c 64 >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "llama.cpp's method needs at least 128 (two windows of 64); a smaller -c, or --method ember$" "$tmp/err"
rc=$?; check "perplexity --method llama on a short text: how many tokens it needs ($(head -1 "$tmp/err"))" $rc

# ---- chat: unknown /commands --------------------------------------------------------------------
printf '/frobnicate now\n//x marks the spot\n/exit\n' | "$ember" chat -m "$model" --backend $backend -n 4 >/dev/null 2>"$tmp/err"
grep -qxF "[unknown command /frobnicate: the commands are /reset, /save FILE, /load FILE, /help, /exit (or /quit); start a line with // to send it with one /]" "$tmp/err" &&
    [ "$(grep -c '^\[turn ' "$tmp/err")" = 1 ]
rc=$?; check "chat: /frobnicate gets the list and is not sent, //x is sent ($(head -c 300 "$tmp/err"))" $rc

# ---- chat: line editing on a terminal --------------------------------------------------------------
if ! command -v python3 >/dev/null || [ -n "${EMBER_TEST_NO_TTY:-}" ]; then
    echo "SKIP (part): no python3 or no pseudo-terminal: line editing not checked"
else
cat >"$tmp/pty_edit.py" <<'EOF'
# Types into ember chat on a pty with arrow keys and checks, through /save, what the
# conversation holds: the edited lines.
import os, subprocess, sys
from chat_pty import ChatPty
ember, model, backend, saved = sys.argv[1:5]
t = ChatPty(ember, model, backend, 4)
until, p, master = t.until, t.p, t.master
fails = []
def expect(ok, what):
    if not ok: fails.append(what)
LEFT, RIGHT, UP, HOME, END, BS = b"\x1b[D", b"\x1b[C", b"\x1b[A", b"\x1b[H", b"\x1b[F", b"\x7f"
# The editor draws its prompt once the terminal is in raw mode: keys are sent only then,
# as a user types after seeing it (typed earlier, the terminal's own line discipline
# takes them, as it does for any program between two reads).
def prompt_after(what, mark=0):
    return lambda s: what in s[mark:] and s[mark:].endswith(b"\x1b[K> ")
expect(until(prompt_after(b"")), "the first prompt")
# "helo wrld" -> Home, Right x3, "l" -> "hello wrld"; End, Left x3, "o" -> "hello world";
# then "!!" and one Backspace: "hello world!".
os.write(master, b"helo wrld" + HOME + RIGHT * 3 + b"l" + END + LEFT * 3 + b"o" + END + b"!!" + BS + b"\r")
expect(until(prompt_after(b"[turn 1:")), "turn 1 answered, the prompt back")
mark = len(t.seen)
# Up brings "hello world!" back; Backspace and " again" edit it.
os.write(master, UP + BS + b" again\r")
expect(until(prompt_after(b"[turn 2:", mark)), "turn 2 answered, the prompt back")
mark = len(t.seen)
os.write(master, b"/save " + saved.encode() + b"\r")
expect(until(prompt_after(b"[saved to", mark)), "/save")
os.write(master, b"/exit\r")
rc = t.exit_status(60)
expect(rc == 0, "exit status %s" % rc)
data = open(saved, "rb").read() if os.path.exists(saved) else b""
expect(b"hello world!" in data and b"hello world again" in data, "the saved conversation holds the edited lines")
expect(b"helo" not in data and b"\x1b" not in data.split(b"EMBERKVS")[0], "no unedited text or escape codes in it")
if fails:
    print("terminal output:", t.seen[-1500:])
    print("saved:", data.split(b"EMBERKVS")[0][:400])
    for f in fails: print("FAIL:", f)
    sys.exit(1)
EOF
PYTHONPATH="$root/tests" python3 "$tmp/pty_edit.py" "$ember" "$model" "$backend" "$tmp/edited.chat"
check "chat on a terminal: the model receives the edited lines" $?
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && echo PASS
[ "$fail" -eq 0 ]
