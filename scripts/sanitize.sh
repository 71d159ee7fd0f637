#!/usr/bin/env bash
# Builds everything with AddressSanitizer and UndefinedBehaviorSanitizer (EMBER_SANITIZE=ON)
# in build-asan and runs the whole test suite there (docs/reliability.md, "Sanitizers").
#   scripts/sanitize.sh                 the whole suite
#   scripts/sanitize.sh -R test_engine  extra arguments go to ctest
#   BUILD_DIR=dir JOBS=n scripts/sanitize.sh
# Any ASan report (overflow, use after free, leak) or UBSan report ends the program with
# an error, so the test fails; the report is in ctest's output.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build-asan}
JOBS=${JOBS:-2}
# RelWithDebInfo: -O2 -g, so that reports name files and lines.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=ON >/dev/null
cmake --build "$BUILD_DIR" -j"$JOBS"

# Every process of the suite inherits these through ctest: the test programs, and the
# sanitized `ember`, examples and demo that the shell and Python tests start (EMBER_BIN
# and the like).
# ASAN_OPTIONS: detect_leaks runs LeakSanitizer at exit (the default on x86-64 Linux,
#   said so that it stays on); verify_asan_link_order=0 because the preload below comes
#   before the ASan runtime in the library list (it replaces dlclose only, which ASan
#   merely watches).
# LSAN_OPTIONS: tests/lsan.supp, leaks inside third-party libraries, by library name.
# UBSAN_OPTIONS: a stack trace, and stop at the first report (the build also has
#   -fno-sanitize-recover=undefined).
# LD_PRELOAD: lsan_keep_loaded.so makes dlclose() do nothing in sanitized processes, so
#   that the Vulkan and OpenGL drivers stay mapped until exit: what they keep in globals
#   is then no leak, and what they do leak is reported under their name, not as
#   "<unknown module>" (tests/lsan_keep_loaded.c). Other processes get the real dlclose.
build=$(cd "$BUILD_DIR" && pwd)
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:strict_string_checks=1:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LD_PRELOAD=$build/lsan_keep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}
start=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$JOBS" "$@"
echo "sanitized test suite wall time: $(( $(date +%s) - start )) s"
