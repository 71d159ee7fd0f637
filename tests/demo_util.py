"""demo_util.py — what the ember-chat tests (tests/test_demo.py, tests/test_demo_input.py,
tests/test_demo_long.py) share: checks that print "ok: " or "FAIL: " and are counted,
skipping (exit 77, ctest's skip code), finding ember-chat, the tools and the stories260K
model, the summary line with the exit status, and for the tests that type into the
window: a private Xvfb display and ember-chat run on it with its stderr read as it grows
(the events they wait for: docs/ember-chat.md, "What stderr says"). The tests import it
from their own folder (sys.path), whatever the working directory."""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

failed = []  # what each failed check said


def check(ok, what):
    """Prints what was checked and whether it held; counts a failure. Returns ok."""
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failed.append(what)
    return ok


def skip(why):
    """Prints "SKIP: why" and exits 77."""
    print("SKIP: " + why)
    sys.exit(77)


def ember_chat():
    """The ember-chat program ($EMBER_CHAT); skips when it is not built."""
    chat = os.environ.get("EMBER_CHAT")
    if not chat or not os.path.exists(chat):
        skip("ember-chat is not built (SDL2, SDL2_ttf or libcjson missing: scripts/setup.sh)")
    return chat


def need_tool(tool, package="it"):
    """Skips unless tool is on PATH; the message names the package setup.sh installs."""
    if not shutil.which(tool):
        skip("%s is not installed (scripts/setup.sh installs %s)" % (tool, package))


def stories260k():
    """The path of stories260K's GGUF under $EMBER_SHARED (else ../shared beside the
    repository), whether or not it exists."""
    shared = os.environ.get("EMBER_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
    return os.path.join(shared, "models", "stories260K", "stories260K-f32.v3.gguf")


def x_session(why):
    """What the tests that drive the window need: ember-chat, Xvfb, xdotool and xclip, and
    stories260K (why: what it is needed for). Returns (ember-chat, the model's path);
    skips without any of them."""
    exe = ember_chat()
    for tool in ("Xvfb", "xdotool", "xclip"):
        need_tool(tool)
    model = stories260k()
    if not os.path.exists(model):
        skip("needs ../shared/models/stories260K (%s)" % why)
    return exe, model


def finish(name):
    """Prints the summary line and exits: 0 when every check held, else 1."""
    print("%s: %s" % (name, "all passed" if not failed else "%d check(s) failed" % len(failed)))
    sys.exit(1 if failed else 0)


class Display:
    """A private Xvfb server; its display number comes back through -displayfd."""

    def __init__(self):
        r, w = os.pipe()
        # stdout too off the test's pipe: ctest waits for the pipe to close, so a server
        # left behind by a test that died would hold the suite until its timeout.
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
                                     pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        atexit.register(self.close)
        os.close(w)
        with os.fdopen(r) as f:
            self.name = ":" + f.readline().strip()
        self.env = dict(os.environ, DISPLAY=self.name)

    def x(self, *args):
        """Runs xdotool or xclip on this display; its stdout."""
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=30).stdout

    def window(self):
        """The ember-chat window's id, with the pointer moved over it (Xvfb runs no window
        manager: keys go to the window under the pointer); None when there is none."""
        win = self.x("xdotool", "search", "--sync", "--name", "ember-chat").split()
        if not win:
            return None
        self.x("xdotool", "mousemove", "--window", win[0], "600", "400")
        return win[0]

    def type_line(self, text):
        """Types text into the window under the pointer and presses Enter."""
        self.x("xdotool", "type", "--delay", "10", text)
        self.x("xdotool", "key", "Return")

    def paste_line(self, text):
        """Puts text on the clipboard (xclip serves it until the display closes), pastes it
        into the window under the pointer with Ctrl+V and presses Enter: a message far
        too long to type."""
        subprocess.run(["xclip", "-selection", "clipboard", "-i"], input=text, text=True, env=self.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        # xclip's child takes the selection after its parent returned: wait until it has.
        wait_until(lambda: self.x("xclip", "-o", "-selection", "clipboard") == text, timeout=30)
        self.x("xdotool", "key", "ctrl+v", "Return")

    def close(self):
        self.proc.terminate()
        self.proc.wait()


class Chat:
    """ember-chat on a Display, with stderr collected in a file, read as it grows."""

    def __init__(self, display, args):
        # The child writes through its own open file, in append mode: sharing one (and so
        # one offset) with the reads below let a line written between a seek(0) and the
        # read land at the start of the file, over the first replies (seen under load).
        self.err = tempfile.NamedTemporaryFile(mode="w+")
        with open(self.err.name, "a") as child_err:
            self.proc = subprocess.Popen(args, env=display.env, stdout=subprocess.PIPE, stderr=child_err, text=True)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def wait_for(self, pattern, count=1, timeout=120):
        """Waits until pattern has matched count times on stderr (or ember-chat exited);
        the count-th match (re.findall's item) or None."""
        end = time.time() + timeout
        while time.time() < end and self.proc.poll() is None:
            found = re.findall(pattern, self.stderr())
            if len(found) >= count:
                return found[count - 1]
            time.sleep(0.05)
        return None

    def close(self):
        """SIGTERM (SDL makes it a quit event); (exit status, stdout)."""
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=60)
        return self.proc.returncode, out

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_until(probe, timeout=30):
    """Calls probe() until it returns something true or timeout seconds passed; its last
    result."""
    end = time.time() + timeout
    while True:
        got = probe()
        if got or time.time() >= end:
            return got
        time.sleep(0.05)


def json_of(stdout):
    """The JSON line ember-chat prints on stdout at exit ({} when there is none)."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    try:
        return json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}


# The stderr line of each reply as it ends (panel.c's log_done).
DONE = (r"ember-chat: panel (\d+) reply (\d+): (\w+), (\d+) prompt tokens, (\d+) from cache, (\d+) restored, "
        r"(\d+) generated; "
        r"turns: (\d+) kept, (\d+) dropped in all")


def replies_done(stderr):
    """Every reply's end line on stderr, as dicts, in order."""
    keys = ("panel", "reply", "finish", "n_prompt", "n_cached", "n_restored", "n_gen", "kept", "dropped_total")
    return [dict(zip(keys, [int(v) if v.isdigit() else v for v in m])) for m in re.findall(DONE, stderr)]


def read_chat_file(path):
    """The messages [(role, text)] and token ids of a saved conversation (--sessions;
    the layout is engine/chat/chat_save.c's: magic, version, template family, five u64
    counts, six u32, the messages, the ids)."""
    import struct
    b = open(path, "rb").read()
    assert b[:8] == b"EMBERCHT", "not a saved chat: " + path
    (family_len,) = struct.unpack_from("<I", b, 12)
    pos = 16 + family_len
    n_msgs, n_ids = struct.unpack_from("<2Q", b, pos)
    pos += 5 * 8 + 6 * 4
    roles, msgs = ("system", "user", "assistant"), []
    for _ in range(n_msgs):
        role, n = struct.unpack_from("<IQ", b, pos)
        # a random-weight model's reply may hold bytes that are not UTF-8
        msgs.append((roles[role], b[pos + 12:pos + 12 + n].decode(errors="replace")))
        pos += 12 + n
    return msgs, list(struct.unpack_from("<%dI" % n_ids, b, pos))
