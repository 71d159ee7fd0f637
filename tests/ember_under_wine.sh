#!/bin/sh
# The ember program for the test scripts when it is the Windows build's ember.exe
# (EMBER_EXE), run under Wine (tests/CMakeLists.txt, scripts/test-windows.sh).
exec wine "${EMBER_EXE:?EMBER_EXE: the Windows ember.exe}" "$@"
