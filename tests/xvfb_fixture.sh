# xvfb_fixture.sh — sourced by scripts that need an X display (the SDL2 example under
# tests/, Wine's Vulkan in scripts/test-windows.sh): one private Xvfb for the whole script.
#
#   xvfb_start    starts Xvfb on a free display, waits until it accepts connections, and
#                 exports DISPLAY; returns 1 when it did not start
#   xvfb_stop     stops it (call it at exit: trap)
# One server a script, not xvfb-run a command: xvfb-run once failed at its own cleanup
# after the program under it had exited as expected, failing the test.
xvfb_pid=""
xvfb_start() {
    local fd_file
    fd_file=$(mktemp)
    # Xvfb picks a free display and writes its number once it accepts connections.
    Xvfb -displayfd 3 -screen 0 640x480x24 -nolisten tcp 3>"$fd_file" >/dev/null 2>&1 &
    xvfb_pid=$!
    for _ in $(seq 200); do [ -s "$fd_file" ] && break; sleep 0.05; done
    [ -s "$fd_file" ] || { rm -f "$fd_file"; return 1; }
    export DISPLAY=":$(head -n1 "$fd_file")"
    rm -f "$fd_file"
}
xvfb_stop() {
    [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null
    xvfb_pid=""
    return 0
}
