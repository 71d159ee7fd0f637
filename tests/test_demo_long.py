#!/usr/bin/env python3
"""test_demo_long.py — ember-chat through a conversation many times longer than the
model's context, typed into the window as a user would, under Xvfb.

    EMBER_CHAT=build/demo/ember-chat python3 tests/test_demo_long.py

Registered by demo/CMakeLists.txt (label gpu). stories260K has a context of 512 tokens;
the character's system prompt (a --characters file written here) takes 130 of them under
ChatML (plain text for this model): eight full 16-token KV blocks. Three runs of one panel:
  1. 30 messages, each typed with xdotool and sent with Enter once the reply before it
     ended, replies capped at -n 112: about 30 x 165 tokens, ten times the context. Every
     message is answered (30 replies, each with tokens); the panel drops the oldest turns
     as the conversation outgrows the context and says so ("[dropped the oldest turn to
     fit the context of 512 tokens]"); after each reply the turns the chat holds and the
     turns dropped add up to the replies so far, and the notes add up to the chat's count;
     the first prompt after each drop still has the system prompt's eight blocks from the
     prefix cache (n_cached >= 128); no error note; exit 0 at SIGTERM, the JSON line
     counting 30 replies.
  2. A greedy character and -n 2000: the first reply runs to the end of the context
     (finish "context", and the panel's note says so); the next message drops that turn
     and is answered, the system prompt again from the cache.
  3. Greedy, -n 16: a long first message (pasted with Ctrl+V) and two short ones; the
     third drops the first turn and keeps the second as text. Then a message too long
     for the context even alone is refused (EMBER_ERR_CONTEXT_FULL) and taken back
     (ember_chat_take_back); the next message is answered without a drop and with all of
     the turn before it from the prefix cache: taking the message back left the
     conversation's ids as they were, and the counts still add up.
It waits only for events, ember-chat's stderr line as each reply ends (docs/ember-chat.md,
"What stderr says"), with generous timeouts: nothing depends on the machine's speed.
Skips (77) without stories260K, ember-chat, Xvfb, xdotool or xclip."""
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo_util import Chat, Display, check, finish, json_of, replies_done, x_session  # noqa: E402

CTX = 512
TURNS = 30
MAX_TOKENS = 112
SYSTEM = ("You are Grandpa Tom, the old storyteller of the village by the river. You tell short, kind stories "
          "about the animals of the forest, the fish in the river and the children who play by the old mill.")
# The system message's 130 tokens (BOS and the ChatML markers included) fill eight
# 16-token KV blocks: what the prefix cache serves every prompt, after a drop too.
SYSTEM_CACHED = 128
SENTENCE = "The little dog ran to the park and played with the ball."  # 19 tokens
ANIMALS = ["fox", "owl", "frog", "cat", "bear", "duck", "dog", "bird", "fish", "mouse"]
NOTE = r"ember-chat: panel 1 \([^)]*\): (.*)"
DROPPED = (r"ember-chat: panel 1 \([^)]*\): \[dropped the (?:(\d+) oldest turns|oldest turn) to fit the context of "
           r"(\d+) tokens\]")
CONTEXT_END = r"\[the reply reached the end of the context \((\d+) tokens\)"


def characters(tmp, name, temperature):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump([{"name": "Grandpa Tom", "system": SYSTEM, "temperature": temperature}], f)
    return path


def send(display, text):
    """Types a message and presses Enter; pastes one too long to type."""
    if len(text) > 100:
        display.paste_line(text)
    else:
        display.type_line(text)


def converse(chat, display, messages, first=1):
    """Sends each message once the reply before it has ended (replies first, first + 1,
    ...); every reply's end line so far."""
    for k, text in enumerate(messages, first):
        send(display, text)
        if chat.wait_for(r"ember-chat: panel 1 reply %d: \w+," % k, timeout=300) is None:
            check(False, "reply %d ends (stderr so far:\n%s)" % (k, chat.stderr()[-3000:]))
            break
    return replies_done(chat.stderr())


def dropped_counts(stderr):
    """The turns each drop note says were dropped, in order, and the contexts they name."""
    notes = re.findall(DROPPED, stderr)
    return [int(n) if n else 1 for n, _ in notes], {int(c) for _, c in notes}


def check_no_errors(stderr, what, expected=()):
    """Notes in brackets are remarks; any other panel note is an error (or a stop), and
    only the expected ones may appear (a substring of each, in order)."""
    errors = [n for n in re.findall(NOTE, stderr) if not n.startswith("[")]
    ok = len(errors) == len(expected) and all(e in n for e, n in zip(expected, errors))
    check(ok, "%s: %s %s" % (what, "error notes as expected" if expected else "no error note", errors))


def check_counts(done, stderr, what):
    """After each reply the turns the chat holds and the turns it dropped add up to the
    replies so far, and the drop notes to the chat's count."""
    counts, contexts = dropped_counts(stderr)
    last = done[-1] if done else {"kept": 0, "dropped_total": -1}
    check(contexts <= {CTX}, "%s: the drop notes name the context of %d (%s)" % (what, CTX, sorted(contexts)))
    check(sum(counts) == last["dropped_total"], "%s: the drop notes' turns (%s) add up to the chat's count (%d)"
          % (what, "+".join(map(str, counts)) or "0", last["dropped_total"]))
    check(all(d["kept"] + d["dropped_total"] == d["reply"] for d in done),
          "%s: after each reply, turns kept + dropped = replies (%s)"
          % (what, ", ".join("%d+%d" % (d["kept"], d["dropped_total"]) for d in done)))
    return counts


def check_cache_after_drops(done, what):
    """The first prompt after each drop starts with the system prompt's blocks, served
    from the prefix cache."""
    after = [d for prev, d in zip([{"dropped_total": 0}] + done, done) if d["dropped_total"] > prev["dropped_total"]]
    cached = [d["n_cached"] for d in after]
    check(bool(after) and all(c >= SYSTEM_CACHED for c in cached),
          "%s: the %d prompts that dropped turns took >= %d tokens from the cache: %s"
          % (what, len(after), SYSTEM_CACHED, cached))


def start(exe, model, display, chars, max_tokens):
    """ember-chat with one panel, ready, its window under the pointer; None on failure."""
    chat = Chat(display, [exe, "-m", model, "--characters", chars, "-n", str(max_tokens)])
    ok = check(chat.wait_for(r"ember-chat: ready:") is not None, "the model loads") and \
        check(display.window() is not None, "the window is found by its title")
    if not ok:
        print(chat.stderr())
        chat.kill()
    return chat if ok else None


def close(chat, replies, what):
    rc, out = chat.close()
    check(rc == 0, "%s: SIGTERM closes the window: exit 0 (got %d)" % (what, rc))
    j = json_of(out)
    check(j.get("replies") == replies, "%s: the JSON line counts %d replies: %s" % (what, replies, j))


def long_conversation(chat, display):
    what = "%d turns, -n %d" % (TURNS, MAX_TOKENS)
    messages = ["Tell me a story about the %s, part %d." % (ANIMALS[k % len(ANIMALS)], k + 1) for k in range(TURNS)]
    done = converse(chat, display, messages)
    err = chat.stderr()
    check([d["reply"] for d in done] == list(range(1, TURNS + 1)), "%s: every message is answered" % what)
    check(all(d["n_gen"] > 0 and d["finish"] in ("length", "eos") for d in done),
          "%s: each reply has tokens and ended by itself: %s" % (what, [(d["n_gen"], d["finish"]) for d in done]))
    generated = sum(d["n_gen"] for d in done)
    check(generated >= 6 * CTX, "%s: the conversation far exceeds the context: %d tokens of replies alone"
          % (what, generated))
    counts = check_counts(done, err, what)
    check(len(counts) >= TURNS // 2, "%s: the panel notes each drop (%d notes)" % (what, len(counts)))
    check_cache_after_drops(done, what)
    check(not re.search(CONTEXT_END, err), "%s: no reply reached the end of the context (-n %d leaves it room)"
          % (what, MAX_TOKENS))
    check_no_errors(err, what)
    close(chat, TURNS, what)


def context_end(chat, display):
    what = "greedy, -n 2000"
    done = converse(chat, display, ["Once upon a time", "Tell me about the fox."])
    err = chat.stderr()
    check(len(done) == 2 and done[0]["finish"] == "context" and done[0]["n_prompt"] + done[0]["n_gen"] == CTX,
          "%s: the first reply runs to the end of the context: %s" % (what, done[:1]))
    check(re.findall(CONTEXT_END, err)[:1] == [str(CTX)], "%s: the panel says the reply reached the end" % what)
    check(len(done) == 2 and done[1]["n_gen"] > 0 and done[1]["kept"] == 1 and done[1]["dropped_total"] == 1,
          "%s: the next message drops that turn and is answered: %s" % (what, done[1:]))
    check(check_counts(done, err, what) == [1], "%s: one drop note, of one turn" % what)
    check_cache_after_drops(done, what)
    check_no_errors(err, what)
    close(chat, 2, what)


def take_back_after_drop(chat, display):
    what = "greedy, -n 16"
    # ~380 tokens, then ~70 a turn: the third message drops the first turn, not the second.
    done = converse(chat, display, [" ".join([SENTENCE] * 12), "Tell me about the fox.", "Tell me about the owl."])
    check([d["dropped_total"] for d in done] == [0, 0, 1] and done[-1]["kept"] == 2,
          "%s: the third message drops the first turn only: %s" % (what, done))
    send(display, " ".join([SENTENCE] * 30))  # ~570 tokens
    refused = chat.wait_for(r"panel 1 \([^)]*\): EMBER_ERR_CONTEXT_FULL: (.*)", timeout=60)
    check(refused is not None and "the last turn alone" in refused,
          "%s: a message longer than the context is refused by the chat's prompt: %s" % (what, refused))
    done = converse(chat, display, ["Tell me about the cat."], first=4)
    err = chat.stderr()
    if not check(len(done) == 4, "%s: the next message is answered" % what):
        return
    third, fourth = done[2], done[3]
    whole = (third["n_prompt"] + third["n_gen"] - 1) // 16 * 16  # the blocks the third turn filled
    check(fourth["dropped_total"] == 1 and fourth["kept"] == 3 and fourth["n_cached"] >= whole,
          "%s: after the take-back it drops nothing and takes the whole conversation, %d tokens, from the cache: %s"
          % (what, whole, fourth))
    check_counts(done, err, what)
    check_no_errors(err, what, expected=["EMBER_ERR_CONTEXT_FULL"])
    close(chat, 4, what)


def main():
    exe, model = x_session("its context of 512 tokens")
    tmp = os.environ.get("EMBER_TEST_TMP", "/tmp")
    os.makedirs(tmp, exist_ok=True)
    sampled, greedy = characters(tmp, "demo_long_sampled.json", 0.8), characters(tmp, "demo_long_greedy.json", 0)
    for part, chars, n in ((long_conversation, sampled, MAX_TOKENS), (context_end, greedy, 2000),
                           (take_back_after_drop, greedy, 16)):
        display = Display()
        chat = start(exe, model, display, chars, n)
        try:
            if chat:
                part(chat, display)
        finally:
            if chat:
                chat.kill()
            display.close()
    finish("test_demo_long")


if __name__ == "__main__":
    main()
