#!/usr/bin/env python3
"""test_demo_input.py — ember-chat driven by keyboard and mouse, as a user would, under Xvfb.

    EMBER_CHAT=build/demo/ember-chat python3 tests/test_demo_input.py

Registered by demo/CMakeLists.txt (label gpu). xdotool sends real X input events (XTEST)
and xclip reads the clipboard, both installed by scripts/setup.sh. One panel, one window:
  1. "Once upon a time" is sent (--say); once 8 of its tokens have streamed Esc stops the
     reply: the panel notes "stopped after N tokens" with 8 <= N < 400 (a whole reply
     takes ~460, to the end of the context);
  2. a second message is typed and sent with Enter; once 8 of its tokens have streamed
     the Stop button (the title bar's right end while a reply streams) stops that reply
     the same way;
  3. a click on the first message copies it: the clipboard holds "Once upon a time";
  4. Ctrl+S saves the conversation (--sessions): the file holds both messages and both
     stopped replies;
  5. SIGTERM closes the window (SDL turns it into a quit event): the conversation is saved
     again before it exits, exit 0, the JSON line counts the two stopped replies (replies
     that ended) and their tokens.
Nothing here depends on the machine's speed: every step waits for an event (a stderr line
of ember-chat's, --progress 8 giving one every 8 tokens streamed; the clipboard's content),
never a fixed time. And --budget 0 --fps 30 lets the engine finish at most one step per
frame, so a reply streams at most 30 tokens a second however fast the machine is: a
whole reply takes 15 s or more, far longer than the few frames between a progress line
and the key or click that answers it.
Uses ../shared/models/stories260K (its context of 512 makes a reply long enough to stop);
skips (77) without it, without ember-chat, Xvfb, xdotool or xclip."""
import os
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo_util import (Chat, Display, check, finish, json_of, read_chat_file, replies_done,  # noqa: E402
                       wait_until, x_session)

# chat_ui.h's layout for one panel in a 1280x720 window: stats bar 30 px, title bar 32 px
# with the Stop button at its right end (x1 - 64, top + 5, 56 wide, 22 high); the user's
# messages are right-aligned at the top of the message area (from y 62).
STOP_XY = (1280 - 64 + 28, 30 + 5 + 11)
FIRST_MESSAGE_XY = (1180, 87)
FIRST = "Once upon a time"
SECOND = "Tell me about the park"
PROGRESS = 8  # --progress: a stderr line every 8 tokens streamed
SESSIONS = os.path.join(os.environ.get("EMBER_TEST_TMP", "/tmp"), "demo_input_sessions")
SAVED = os.path.join(SESSIONS, "panel-1.emberchat")


def streamed(chat, reply):
    """Waits until PROGRESS tokens of reply (1, 2, ...) have streamed; whether they did."""
    return chat.wait_for(r"panel 1 reply %d: %d tokens streamed" % (reply, PROGRESS), timeout=120) is not None


def stopped_tokens(chat, count):
    m = chat.wait_for(r"panel 1 \([^)]*\): stopped after (\d+) tokens", count, timeout=60)
    return int(m) if m is not None else None


def main():
    exe, model = x_session("a reply long enough to stop mid-stream")
    display = Display()
    shutil.rmtree(SESSIONS, ignore_errors=True)
    chat = Chat(display, [exe, "-m", model, "--say", FIRST, "-n", "2000", "--progress", str(PROGRESS),
                          "--budget", "0", "--fps", "30", "--sessions", SESSIONS])
    try:
        drive(display, chat)
    finally:
        chat.kill()
        display.close()
    finish("test_demo_input")


def stop_with_esc(display, chat):
    if not check(streamed(chat, 1), "the first reply streams (%d tokens)" % PROGRESS):
        return None
    display.x("xdotool", "key", "Escape")
    n1 = stopped_tokens(chat, 1)
    check(n1 is not None and PROGRESS <= n1 < 400, "Esc stops the first reply mid-stream (after %s tokens)" % n1)
    return n1


def stop_with_button(display, chat, win):
    display.type_line(SECOND)
    if not check(streamed(chat, 2), "the second message, typed and sent with Enter, is answered"):
        return None
    display.x("xdotool", "mousemove", "--window", win, str(STOP_XY[0]), str(STOP_XY[1]), "click", "1")
    n2 = stopped_tokens(chat, 2)
    check(n2 is not None and PROGRESS <= n2 < 400,
          "the Stop button stops the second reply mid-stream (after %s tokens)" % n2)
    return n2


def drive(display, chat):
    if not check(chat.wait_for(r"ember-chat: ready:") is not None, "the model loads"):
        print(chat.stderr())
        return
    win = display.window()
    if not check(win is not None, "the window is found by its title"):
        return
    n1 = stop_with_esc(display, chat)
    n2 = stop_with_button(display, chat, win)
    done = replies_done(chat.stderr())
    check([d["finish"] for d in done] == ["cancelled", "cancelled"], "exactly two replies, both stopped: %s" % done)

    display.x("xdotool", "mousemove", "--window", win, str(FIRST_MESSAGE_XY[0]), str(FIRST_MESSAGE_XY[1]),
              "click", "1")
    # The click is handled at the next frame: wait for the clipboard to change.
    clipboard = lambda: display.x("xclip", "-o", "-selection", "clipboard")  # noqa: E731
    copied = wait_until(lambda: clipboard() == FIRST, timeout=30)
    check(copied, "a click on the first message copies it (clipboard: %r)" % clipboard())

    saved_line = r"panel 1 \([^)]*\): \[saved to " + SAVED + r": \d+ bytes, with the KV cache\]"
    display.x("xdotool", "key", "ctrl+s")
    saved = chat.wait_for(saved_line, timeout=60) is not None
    if check(saved and os.path.exists(SAVED), "Ctrl+S saves the conversation with its KV cache"):
        msgs, _ = read_chat_file(SAVED)
        check([r for r, _ in msgs] == ["user", "assistant"] * 2 and msgs[0][1] == FIRST and msgs[2][1] == SECOND,
              "the saved file holds both messages and both stopped replies: %s" % [r for r, _ in msgs])
        os.remove(SAVED)

    rc, out = chat.close()
    check(rc == 0, "SIGTERM closes the window: exit 0 (got %d)" % rc)
    check(os.path.exists(SAVED) and len(read_chat_file(SAVED)[0]) == 4,
          "quitting saved the conversation again before the window closed")
    j = json_of(out)
    check(j.get("replies") == 2, "both stopped replies count as ended (docs/ember-chat.md): %s" % j)
    if n1 is not None and n2 is not None:
        check(j.get("tokens") == n1 + n2, "the JSON's tokens are those of the two stopped replies (%d + %d)" % (n1, n2))


if __name__ == "__main__":
    main()
