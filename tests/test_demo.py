#!/usr/bin/env python3
"""test_demo.py — ember-chat, the SDL2 demo, end to end under Xvfb.

    EMBER_CHAT=build/demo/ember-chat EMBER_BIN=build/ember python3 tests/test_demo.py

Registered by demo/CMakeLists.txt (label gpu). Checks:
  1. three panels, "Hello" sent to each, a screenshot once every reply is complete:
     exit 0; the JSON line at exit has its 7 keys, panels 3, replies 3, tokens > 0; the
     PNG (decoded here with zlib only) shows reply text (the warm colour) and the user's
     message (the blue one) in the message area of each panel;
     then with 1, 3 and 8 panels: the stats bar and the panels' titles fit the 1280 px
     window (the widths the layout prints with --verbose, and no pixels at the edges);
     中 and 😀 sent to a panel are drawn by the fallback fonts (CJK, colour emoji;
     skipped where they are not installed);
     --help names every key binding of demo/controls.c;
  2. --font /nonexistent: exit 1 and a message that names the font;
  3. a model that does not exist: a message in the window and on stderr, exit 1, no crash;
  4. a message longer than the context: EMBER_ERR_CONTEXT_FULL shown in the panel
     (and on stderr), exit 0;
  5. a device without what Ember needs (tests/layer_old_device.c makes lavapipe claim
     Vulkan 1.1): the reason in the window and on stderr, exit 1, no crash;
  6. --sessions: two panels answer and are saved with their KV cache at quit; a second
     run restores them (the conversation shown, its KV restored, not computed) and
     continues; the saved conversation equals `ember chat`'s uninterrupted one, token for
     token (greedy); a damaged file is refused with a note and its panel starts afresh.
Uses ../shared/models/stories260K when present, else a test model made with
`ember make-test-model`. Skips (77) without ember-chat or Xvfb."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo_util import (Display, check, ember_chat, finish, need_tool, read_chat_file,  # noqa: E402
                       replies_done, skip, stories260k)

TIMEOUT = 300
# One private Xvfb for the whole test (demo_util.Display). xvfb-run was used before: its
# cleanup once failed in CI ("problem while cleaning up temporary directory", exit 5)
# after ember-chat had exited as it should.
DISPLAY = []
KEYS = {"panels", "replies", "tokens", "tok_s", "fps_mean", "frame_ms_p50", "frame_ms_p99"}


def run(args, xvfb=True, env=None):
    if xvfb:
        if not DISPLAY:
            DISPLAY.append(Display())
        env = dict(env if env is not None else os.environ, DISPLAY=DISPLAY[0].name)
    print("$ " + " ".join(a if len(a) < 60 else a[:40] + "...(%d chars)" % len(a) for a in args))
    p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    sys.stderr.write(p.stderr)
    return p


def model_path(tmp):
    m = stories260k()
    if os.path.exists(m):
        return m
    ember = os.environ.get("EMBER_BIN")
    if not ember:
        skip("no ../shared/models/stories260K and no EMBER_BIN to make a test model with")
    print("stories260K is absent (../shared/models): using a random-weight test model")
    m = os.path.join(tmp, "demo_model.gguf")
    subprocess.run([ember, "make-test-model", m, "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                    "--ffn", "128", "--vocab", "512", "--ctx", "512"], check=True)
    return m


def read_png(path):
    """(width, height, rows of RGB bytes) of an 8-bit RGB PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(typ + body) & 0xFFFFFFFF == crc, "bad CRC in " + typ.decode()
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype == 2, "expected 8-bit RGB"
        elif typ == b"IDAT":
            idat += body
        elif typ == b"IEND":
            break
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride, rows, prev = w * 3, [], bytearray(w * 3)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride) if f else ():
            a = line[i - 3] if i >= 3 else 0
            b = prev[i]
            c = prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, rows


def count_colours(rows, x, y, w, h):
    """Pixels of reply text (warm: red well above blue) and of user text (blue well above
    red) inside the rectangle; the background is dark grey."""
    reply = user = 0
    for yy in range(y, y + h):
        row = rows[yy]
        for xx in range(x, x + w):
            r, g, b = row[3 * xx], row[3 * xx + 1], row[3 * xx + 2]
            if r > 120 and r - b > 35:
                reply += 1
            elif b > 120 and b - r > 35:
                user += 1
    return reply, user


def json_line(stdout):
    lines = [l for l in stdout.splitlines() if l.strip()]
    if not check(len(lines) == 1, "exactly one line on stdout (got %d)" % len(lines)):
        return {}
    try:
        return json.loads(lines[0])
    except ValueError:
        check(False, "the line on stdout is JSON: " + lines[0])
        return {}


def test_three_panels(chat, model, tmp, source):
    shot = os.path.join(tmp, "demo_shot.png")
    if os.path.exists(shot):
        os.remove(shot)
    p = run([chat, "-m", model, "--panels", "3", "--characters", os.path.join(source, "demo", "characters.json"),
             "--say", "Hello", "--screenshot", shot, "--quit-after-reply", "-n", "24", "--verbose"])
    check(p.returncode == 0, "three panels: exit 0 (got %d)" % p.returncode)
    j = json_line(p.stdout)
    check(set(j) == KEYS, "the JSON line has exactly the keys " + ", ".join(sorted(KEYS)))
    check(j.get("panels") == 3 and j.get("replies") == 3, "panels 3, replies 3: %s" % j)
    check(isinstance(j.get("tokens"), int) and j["tokens"] > 0, "tokens > 0")
    if not check(os.path.exists(shot), "the screenshot was written"):
        return
    w, h, rows = read_png(shot)
    check((w, h) == (1280, 720), "the screenshot is 1280x720 (got %dx%d)" % (w, h))
    areas = [tuple(map(int, m)) for m in re.findall(r"panel \d+ messages (\d+) (\d+) (\d+) (\d+)", p.stderr)]
    # The layout the demo uses (chat_ui.h): stats bar 30 px, titles 32 px, input 44 px.
    expect = [(i * w // 3, 62, (i + 1) * w // 3 - i * w // 3, h - 62 - 44) for i in range(3)]
    check(areas == expect, "message areas as the layout says: %s" % areas)
    for i, (x, y, aw, ah) in enumerate(expect):
        reply, user = count_colours(rows, x, y, aw, ah)
        check(reply >= 150, "panel %d shows reply text (%d warm pixels)" % (i + 1, reply))
        check(user >= 20, "panel %d shows the user's message (%d blue pixels)" % (i + 1, user))


def text_pixels(rows, x, y, w, h):
    """Pixels brighter than the bars' backgrounds (text, the KV gauge) in the rectangle."""
    return sum(1 for yy in range(y, y + h) for xx in range(x, x + w) if max(rows[yy][3 * xx:3 * xx + 3]) > 90)


def test_layout_fits(chat, model, tmp, source):
    """The stats bar and every panel's title fit a 1280 px window with 1, 3 and 8 panels:
    the numbers the demo's layout prints (--verbose) and the screenshot's pixels (nothing
    drawn in the last 10 px of the bar or of a title, where the text used to run on)."""
    for n in (1, 3, 8):
        shot = os.path.join(tmp, "demo_shot_fit_%d.png" % n)
        p = run([chat, "-m", model, "--panels", str(n), "--characters", os.path.join(source, "demo", "characters.json"),
                 "--say", "Hello", "--screenshot", shot, "--quit-after-reply", "-n", "8", "--verbose"])
        bar = re.findall(r"stats bar (\d+) px of (\d+), (\d+) of (\d+) fields", p.stderr)
        if not check(p.returncode == 0 and len(bar) == 1, "%d panels: exit 0 and the stats bar's width on stderr" % n):
            continue
        right, width, shown, fields = map(int, bar[0])
        check(width == 1280 and right <= width - 10,
              "%d panels: the stats bar's text ends at %d px, inside 1280 - 10 (%d of %d fields)"
              % (n, right, shown, fields))
        titles = [tuple(map(int, t)) for t in
                  re.findall(r"panel \d+ title (\d+) (\d+): name to (\d+), status (\d+) to (\d+)", p.stderr)]
        fit = len(titles) == n and all(x1 <= x + w - 10 and (s0 == 0 or (s0 >= x1 + 8 and s1 <= x + w - 10))
                                       for x, w, x1, s0, s1 in titles)
        check(fit, "%d panels: each title's name and status end 10 px inside the panel, apart: %s" % (n, titles))
        if not os.path.exists(shot):
            continue
        _, _, rows = read_png(shot)
        edge = text_pixels(rows, 1270, 0, 10, 30)
        check(edge == 0, "%d panels: nothing drawn in the stats bar's last 10 px (%d pixels)" % (n, edge))
        # the title's last 8 px, above the focused panel's 2 px accent line
        ends = [text_pixels(rows, x + w - 8, 30, 8, 30) for x, w, _, _, _ in titles]
        check(not any(ends), "%d panels: nothing drawn in any title's last 8 px: %s" % (n, ends))
        if n == 3:
            check_cut_markers(p.stderr, rows)


def check_cut_markers(stderr, rows):
    """A reply that -n cut ("length") says so below it, in the remarks' grey; one that
    ended by itself does not."""
    areas = [tuple(map(int, m)) for m in re.findall(r"panel \d+ messages (\d+) (\d+) (\d+) (\d+)", stderr)]
    for d in replies_done(stderr):
        marked = re.search(r"panel %d \([^)]*\): \[cut: max tokens \(-n 8\)\]" % d["panel"], stderr) is not None
        x, y, w, h = areas[d["panel"] - 1]
        grey = sum(1 for yy in range(y, y + h) for xx in range(x, x + w)
                   if all(abs(rows[yy][3 * xx + c] - v) <= 3 for c, v in enumerate((150, 160, 178))))
        cut = d["finish"] == "length"
        check(marked == cut and (grey >= 30) == cut,
              "panel %d (%s): the cut marker %s (%d pixels of the remark colour)"
              % (d["panel"], d["finish"], "shows" if cut else "is absent", grey))


CJK_FONTS = ("/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
             "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
EMOJI_FONT = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"


def test_fallback_fonts(chat, model, tmp):
    """中 is drawn by a CJK fallback font (fonts-droid-fallback or fonts-noto-cjk), 😀 by
    the colour emoji font (fonts-noto-color-emoji): the font the demo's own glyph lookup
    chose (--verbose), and the emoji's yellow in the user's bubble."""
    if not any(os.path.exists(f) for f in CJK_FONTS):
        print("SKIP: fallback fonts: no CJK font installed (scripts/setup.sh installs fonts-droid-fallback)")
        return
    shot = os.path.join(tmp, "demo_shot_fallback.png")
    p = run([chat, "-m", model, "--say", "\u4e2d\u6587 \U0001F600", "--screenshot", shot, "--quit-after-reply",
             "-n", "4", "--verbose"])
    cjk = re.findall(r"U\+4E2D drawn by (.*)", p.stderr)
    check(p.returncode == 0 and len(cjk) == 1 and cjk[0] in CJK_FONTS,
          "U+4E2D is drawn by the CJK fallback font: %s" % cjk)
    if not os.path.exists(EMOJI_FONT):
        print("SKIP: colour emoji: fonts-noto-color-emoji is not installed")
        return
    emoji = re.findall(r"U\+1F600 drawn by (.*)", p.stderr)
    check(emoji == [EMOJI_FONT], "U+1F600 is drawn by the colour emoji font: %s" % emoji)
    if os.path.exists(shot):
        _, _, rows = read_png(shot)
        yellow = sum(1 for y in range(62, 140) for x in range(1000, 1280)
                     if rows[y][3 * x] > 200 and rows[y][3 * x + 1] > 150 and rows[y][3 * x + 2] < 100)
        check(yellow >= 20, "the emoji shows in colour in the user's bubble (%d yellow pixels)" % yellow)


# Each key controls.c handles (its SDLK_ names) as --help names it.
HELP_KEYS = {"RETURN": "Enter", "KP_ENTER": "Enter", "TAB": "Tab", "ESCAPE": "Esc", "LEFT": "Left/Right",
             "RIGHT": "Left/Right", "HOME": "Home/End", "END": "Home/End", "BACKSPACE": "Backspace/Delete",
             "DELETE": "Backspace/Delete", "UP": "Up/Down", "DOWN": "Up/Down", "PAGEUP": "PageUp/PageDown",
             "PAGEDOWN": "PageUp/PageDown", "F12": "F12", "l": "Ctrl+L", "s": "Ctrl+S", "q": "Ctrl+Q",
             "v": "Ctrl+V"}


def test_help_keys(chat, source):
    """--help lists every key binding demo/controls.c handles (read from its source, so a
    binding added there without a line in --help fails here), and the mouse's."""
    p = run([chat, "--help"], xvfb=False)
    code = open(os.path.join(source, "demo", "controls.c")).read()
    keys = sorted(set(re.findall(r"SDLK_(\w+)", code)))
    unknown = [k for k in keys if k not in HELP_KEYS]
    check(not unknown, "every key controls.c handles has a name here: %s" % unknown)
    missing = sorted({HELP_KEYS[k] for k in keys if k in HELP_KEYS and HELP_KEYS[k] not in p.stdout})
    missing += [w for w in ("Shift+Tab", "wheel", "click", "Stop button") if w not in p.stdout]
    check(p.returncode == 0 and not missing, "--help lists every key binding (%d keys); missing: %s"
          % (len(keys), missing))


def test_missing_font(chat, model):
    p = run([chat, "-m", model, "--font", "/nonexistent/font.ttf"])
    check(p.returncode == 1, "--font /nonexistent: exit 1 (got %d)" % p.returncode)
    check("/nonexistent/font.ttf" in p.stderr and "font" in p.stderr, "--font /nonexistent: the message names the font")


def error_in_window(path):
    """Pixels of the load error, drawn in the middle of the window in the note colour
    (255, 128, 110)."""
    w, h, rows = read_png(path)
    return sum(1 for y in range(h // 2 - 100, h // 2 + 100) for x in range(w // 2 - 260, w // 2 + 260)
               if rows[y][3 * x] > 180 and rows[y][3 * x + 2] < 150 and rows[y][3 * x] - rows[y][3 * x + 1] > 60)


def test_missing_model(chat, tmp):
    missing = os.path.join(tmp, "no-such-model.gguf")
    shot = os.path.join(tmp, "demo_shot_missing.png")
    p = run([chat, "-m", missing, "--panels", "2", "--say", "Hello", "--screenshot", shot, "--quit-after-reply"])
    check(p.returncode == 1, "missing model: exit 1, not a crash (got %d)" % p.returncode)
    check("cannot load the model" in p.stderr and missing in p.stderr, "missing model: the message names the file")
    check(json_line(p.stdout).get("replies") == 0, "missing model: no replies")
    check("messages" not in p.stderr and "stats bar" not in p.stderr,
          "without --verbose a screenshot prints no layout lines on stderr")
    if check(os.path.exists(shot), "missing model: the screenshot was written"):
        red = error_in_window(shot)
        check(red >= 100, "missing model: the error is shown in the window (%d red pixels)" % red)


def test_old_device(chat, model, tmp):
    """A device without what Ember needs: tests/layer_old_device.c makes lavapipe claim
    Vulkan 1.1 (a driver too old for Ember)."""
    layers = os.path.join(os.environ.get("EMBER_BUILD_DIR", ""), "tests", "layers")
    if not os.path.exists(os.path.join(layers, "VkLayer_ember_old_device.json")):
        check(False, "the test layer is built in " + layers)
        return
    env = dict(os.environ, VK_LAYER_PATH=layers, VK_INSTANCE_LAYERS="VK_LAYER_EMBER_old_device")
    shot = os.path.join(tmp, "demo_shot_old_device.png")
    p = run([chat, "-m", model, "--panels", "2", "--say", "Hello", "--screenshot", shot, "--quit-after-reply"],
            env=env)
    check(p.returncode == 1, "a Vulkan 1.1 device: exit 1, not a crash (got %d)" % p.returncode)
    check("has Vulkan 1.1; Ember needs 1.2" in p.stderr, "a Vulkan 1.1 device: the message says what is missing")
    if check(os.path.exists(shot), "a Vulkan 1.1 device: the screenshot was written"):
        red = error_in_window(shot)
        check(red >= 100, "a Vulkan 1.1 device: the error is shown in the window (%d red pixels)" % red)


def test_too_long(chat, model):
    p = run([chat, "-m", model, "--panels", "2", "--say", "word " * 4000, "--quit-after-reply", "-n", "8"])
    check(p.returncode == 0, "over-long message: exit 0 (got %d)" % p.returncode)
    check(p.stderr.count("EMBER_ERR_CONTEXT_FULL") == 2, "over-long message: EMBER_ERR_CONTEXT_FULL in each panel")
    check(json_line(p.stdout).get("replies") == 0, "over-long message: no replies")


def test_structured_character(chat, model, source):
    """The fourth character of demo/characters.json answers by its schema (mood, action,
    line): the reply ends with the grammar and the panel shows its tags and its line."""
    p = run([chat, "-m", model, "--panels", "4", "--characters", os.path.join(source, "demo", "characters.json"),
             "--say", "Hello", "--quit-after-reply", "-n", "300"])
    check(p.returncode == 0, "four panels: exit 0 (got %d)" % p.returncode)
    shown = re.findall(r"panel 4 reply 1: structured: \(mood: (\w+), action: (\w+)\) (.*)", p.stderr)
    ok = len(shown) == 1 and shown[0][0] in ("cheerful", "wary", "annoyed", "sly") and \
        shown[0][1] in ("greet", "trade", "haggle", "refuse", "leave")
    check(ok, "the structured character's reply is shown as its mood, action and line: %s" % shown)
    check("panel 4 reply 1: grammar," in p.stderr, "its reply ended with its grammar")


def test_sessions(chat, model, tmp):
    folder = os.path.join(tmp, "demo_sessions")
    shutil.rmtree(folder, ignore_errors=True)
    base = [chat, "-m", model, "--panels", "2", "--temp", "0", "-n", "16", "--sessions", folder, "--quit-after-reply"]
    files = [os.path.join(folder, "panel-%d.emberchat" % i) for i in (1, 2)]
    p = run(base + ["--say", "Hello"])
    saved = re.findall(r"\[saved to (\S+): \d+ bytes, with the KV cache\]", p.stderr)
    check(p.returncode == 0 and sorted(saved) == files, "--sessions: both panels saved at quit with their KV cache")
    if not all(os.path.exists(f) for f in files):
        return
    _, first_ids = read_chat_file(files[0])
    p = run(base + ["--say", "Once upon"])
    restored = re.findall(r"\[restored (\S+): (\d+) messages, with the KV cache\]", p.stderr)
    check(restored == [(f, "2") for f in files], "the second run restores both panels: %s" % restored)
    done = replies_done(p.stderr)
    _, ids = read_chat_file(files[0])
    check(len(done) == 2 and all(d["n_restored"] == len(first_ids) and d["n_cached"] == 0 for d in done),
          "the continued replies take the saved conversation's %d tokens' K/V from the file: %s"
          % (len(first_ids), done))
    cli = os.path.join(tmp, "demo_sessions_cli.emberchat")
    c = subprocess.run([os.environ["EMBER_BIN"], "chat", "-m", model, "--temp", "0", "-n", "16"],
                       input="Hello\nOnce upon\n/save %s\n" % cli, capture_output=True, text=True, timeout=TIMEOUT)
    if check(c.returncode == 0 and os.path.exists(cli), "ember chat saves the same conversation uninterrupted"):
        msgs, cli_ids = read_chat_file(cli)
        demo_msgs, _ = read_chat_file(files[0])
        check(demo_msgs == msgs and ids == cli_ids and len(msgs) == 4,
              "saved, restored and continued = uninterrupted: %d messages, %d tokens" % (len(msgs), len(ids)))
    with open(files[1], "r+b") as f:  # one byte of the KV state changed
        f.seek(os.path.getsize(files[1]) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x10]))
    p = run(base + ["--say", "Tell me"])
    check(p.returncode == 0 and re.search(r"panel 2 \(.*\): cannot restore %s: " % re.escape(files[1]), p.stderr),
          "a damaged file: a note names it, exit 0")
    done = {d["panel"]: d for d in replies_done(p.stderr)}
    check(done.get(1, {}).get("n_restored", 0) > 0 and done.get(2, {}).get("n_restored") == 0,
          "the damaged panel starts afresh, the other is restored: %s" % done)


def main():
    chat = ember_chat()
    need_tool("Xvfb", "xvfb")
    tmp = os.environ.get("EMBER_TEST_TMP", "/tmp")
    os.makedirs(tmp, exist_ok=True)
    source = os.environ.get("EMBER_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    model = model_path(tmp)
    test_three_panels(chat, model, tmp, source)
    test_help_keys(chat, source)
    test_layout_fits(chat, model, tmp, source)
    test_fallback_fonts(chat, model, tmp)
    test_structured_character(chat, model, source)
    test_missing_font(chat, model)
    test_missing_model(chat, tmp)
    test_old_device(chat, model, tmp)
    test_too_long(chat, model)
    if os.environ.get("EMBER_BIN"):
        test_sessions(chat, model, tmp)
    else:
        print("SKIP: --sessions (no EMBER_BIN to compare with ember chat)")
    for d in DISPLAY:
        d.close()
    finish("test_demo")


if __name__ == "__main__":
    main()
