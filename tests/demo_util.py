"""demo_util.py — what the ember-chat tests (tests/test_demo.py, tests/test_demo_input.py)
share: checks that print "ok: " or "FAIL: " and are counted, skipping (exit 77, ctest's
skip code), finding ember-chat, the tools and the stories260K model, and the summary line
with the exit status. The tests import it from their own folder (sys.path), whatever the
working directory."""
import os
import shutil
import sys

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


def finish(name):
    """Prints the summary line and exits: 0 when every check held, else 1."""
    print("%s: %s" % (name, "all passed" if not failed else "%d check(s) failed" % len(failed)))
    sys.exit(1 if failed else 0)
