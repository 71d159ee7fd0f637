#!/usr/bin/env bash
# The fuzz targets' inputs, replayed without clang: every file under
# fuzz/regressions/<target>/ (inputs that once found a bug, kept after the fix) and the
# seed corpora scripts/fuzz-seeds.sh writes, fed to the same LLVMFuzzerTestOneInput as
# the fuzzer's, built by the normal compiler with fuzz/replay.c's main
# (build/fuzz/fuzz_<target>_replay). A replay fails on a crash or on a broken invariant
# (FUZZ_CHECK aborts). Under ASan, and for long runs: scripts/fuzz.sh.
set -uo pipefail
src=${EMBER_SOURCE_DIR:?EMBER_SOURCE_DIR: the source tree}
build=${EMBER_BUILD_DIR:?EMBER_BUILD_DIR: the build folder}
tmp=${EMBER_TEST_TMP:-/tmp}/fuzz-seeds
pass=0 fail=0
check() { # check NAME STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}

EMBER_SHARED=${EMBER_SHARED:-$src/../shared} bash "$src/scripts/fuzz-seeds.sh" "$tmp"
check "fuzz-seeds.sh writes the seeds" $?
[ -d "$src/../shared" ] || echo "note: ../shared is absent: no seeds from llama.cpp's tokenizer texts"

targets=$(bash "$src/scripts/fuzz.sh" --list)
[ "$(echo "$targets" | wc -l)" -ge 5 ]; check "fuzz.sh --list names the five targets ($(echo $targets))" $?
for t in $targets; do
    exe=$build/fuzz/fuzz_${t}_replay
    if [ ! -x "$exe" ]; then
        if [ "$t" = server_request ] && grep -q "^EMBER_MINIMAL:BOOL=ON" "$build/CMakeCache.txt"; then
            echo "note: EMBER_MINIMAL: no server, no fuzz_server_request replay"
            continue
        fi
        check "$exe is built" 1
        continue
    fi
    dirs=("$tmp/$t")
    [ -d "$src/fuzz/regressions/$t" ] && dirs+=("$src/fuzz/regressions/$t")
    want=$(find "${dirs[@]}" -type f | wc -l)
    [ "$(find "$tmp/$t" -type f | wc -l)" -gt 0 ]; check "$t has seeds" $?
    out=$("$exe" "${dirs[@]}" 2>&1)
    rc=$?
    echo "$t: $(echo "$out" | tail -n 1) (of ${dirs[*]})"
    [ $rc -eq 0 ]; check "$t: every input replays without a crash or a broken invariant: $(echo "$out" | tail -n 3)" $?
    grep -qx "replay: $want inputs ran" <<<"$out"; check "$t: all $want inputs ran" $?
done
# Every regression input belongs to a target, and the replayer refuses what it cannot read.
for d in "$src"/fuzz/regressions/*/; do
    [ -d "$d" ] || continue
    grep -qx "$(basename "$d")" <<<"$targets"; check "fuzz/regressions/$(basename "$d") is a target's" $?
done
"$build/fuzz/fuzz_gguf_replay" "$tmp/no-such-input" >/dev/null 2>&1
[ $? -ne 0 ]; check "a missing input fails the replay" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
