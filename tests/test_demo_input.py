#!/usr/bin/env python3
"""test_demo_input.py — ember-chat driven by keyboard and mouse, as a user would, under Xvfb.

    EMBER_CHAT=build/demo/ember-chat python3 tests/test_demo_input.py

Registered by demo/CMakeLists.txt (label gpu). xdotool sends real X input events (XTEST)
and xclip reads the clipboard, both installed by scripts/setup.sh. One panel, one window:
  1. "Once upon a time" is sent (--say); about a second into the reply Esc stops it: the
     panel notes "stopped after N tokens" with 0 < N < the tokens a whole reply takes;
  2. a second message is typed and sent with Enter; the Stop button (the title bar's right
     end while a reply streams) stops that reply the same way;
  3. a click on the first message copies it: the clipboard holds "Once upon a time";
  4. SIGTERM closes the window (SDL turns it into a quit event): exit 0, the JSON line
     counts the two stopped replies (replies that ended) and their tokens.
Uses ../shared/models/stories260K (its context of 512 makes a whole reply ~480 tokens,
several seconds here); skips (77) without it, without ember-chat, Xvfb, xdotool or xclip."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo_util import check, ember_chat, finish, need_tool, skip, stories260k  # noqa: E402

# chat_ui.h's layout for one panel in a 1280x720 window: stats bar 30 px, title bar 32 px
# with the Stop button at its right end (x1 - 64, top + 5, 56 wide, 22 high); the user's
# messages are right-aligned at the top of the message area (from y 62).
STOP_XY = (1280 - 64 + 28, 30 + 5 + 11)
FIRST_MESSAGE_XY = (1180, 87)
FIRST = "Once upon a time"
SECOND = "Tell me about the park"


class Display:
    """A private Xvfb server; its display number comes back through -displayfd."""

    def __init__(self):
        r, w = os.pipe()
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
                                     pass_fds=(w,), stderr=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as f:
            self.name = ":" + f.readline().strip()
        self.env = dict(os.environ, DISPLAY=self.name)

    def x(self, *args):
        """Runs xdotool or xclip on this display; its stdout."""
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=30).stdout

    def close(self):
        self.proc.terminate()
        self.proc.wait()


class Chat:
    """ember-chat with stderr collected in a file, read as it grows."""

    def __init__(self, display, args):
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(args, env=display.env, stdout=subprocess.PIPE, stderr=self.err, text=True)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def wait_for(self, pattern, count=1, timeout=120):
        """Waits until pattern has matched count times on stderr; the last match or None."""
        end = time.time() + timeout
        while time.time() < end and self.proc.poll() is None:
            found = re.findall(pattern, self.stderr())
            if len(found) >= count:
                return found[count - 1]
            time.sleep(0.1)
        return None


def stopped_tokens(chat, count):
    m = chat.wait_for(r"panel 1 \([^)]*\): stopped after (\d+) tokens", count, timeout=30)
    return int(m) if m is not None else None


def main():
    exe = ember_chat()
    for tool in ("Xvfb", "xdotool", "xclip"):
        need_tool(tool)
    model = stories260k()
    if not os.path.exists(model):
        skip("needs ../shared/models/stories260K (a reply long enough to stop mid-stream)")
    display = Display()
    chat = Chat(display, [exe, "-m", model, "--say", FIRST, "-n", "2000"])
    try:
        drive(display, chat)
    finally:
        if chat.proc.poll() is None:
            chat.proc.kill()
        display.close()
    finish("test_demo_input")


def drive(display, chat):
    if not check(chat.wait_for(r"ember-chat: ready:") is not None, "the model loads"):
        print(chat.stderr())
        return
    win = display.x("xdotool", "search", "--sync", "--name", "ember-chat").split()
    if not check(len(win) >= 1, "the window is found by its title"):
        return
    win = win[0]
    # Keys go to the window under the pointer (Xvfb runs no window manager).
    display.x("xdotool", "mousemove", "--window", win, "600", "400")

    time.sleep(1.0)
    display.x("xdotool", "key", "Escape")
    n1 = stopped_tokens(chat, 1)
    check(n1 is not None and 0 < n1 < 400, "Esc stops the first reply mid-stream (after %s tokens)" % n1)

    display.x("xdotool", "type", "--delay", "20", SECOND)
    display.x("xdotool", "key", "Return")
    time.sleep(1.0)
    display.x("xdotool", "mousemove", "--window", win, str(STOP_XY[0]), str(STOP_XY[1]), "click", "1")
    n2 = stopped_tokens(chat, 2)
    check(n2 is not None and 0 < n2 < 400, "the Stop button stops the second reply mid-stream (after %s tokens)" % n2)
    check(chat.stderr().count("stopped after") == 2, "exactly two replies were stopped")

    display.x("xdotool", "mousemove", "--window", win, str(FIRST_MESSAGE_XY[0]), str(FIRST_MESSAGE_XY[1]),
              "click", "1")
    time.sleep(0.5)  # the click is handled at the next frame
    clip = display.x("xclip", "-o", "-selection", "clipboard")
    check(clip == FIRST, "a click on the first message copies it (clipboard: %r)" % clip)

    chat.proc.terminate()
    out, _ = chat.proc.communicate(timeout=60)
    check(chat.proc.returncode == 0, "SIGTERM closes the window: exit 0 (got %d)" % chat.proc.returncode)
    lines = [l for l in out.splitlines() if l.strip()]
    try:
        j = json.loads(lines[-1]) if lines else {}
    except ValueError:
        j = {}
    check(j.get("replies") == 2, "both stopped replies count as ended (docs/ember-chat.md): %s" % j)
    if n1 is not None and n2 is not None:
        check(j.get("tokens") == n1 + n2, "the JSON's tokens are those of the two stopped replies (%d + %d)" % (n1, n2))


if __name__ == "__main__":
    main()
