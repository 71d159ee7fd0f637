#!/usr/bin/env bash
# package_windows.sh — the Windows zip (scripts/package-windows.sh) is what a Windows
# developer needs: it holds ember.exe, ember.dll, the import and static libraries, ember.h,
# ember.pc and the CMake package; examples/embed.c built with mingw-w64 against the unzipped
# files links the DLL (gcc -lember), the static library (-DEMBER_STATIC libember.a) and,
# through find_package(ember) with cmake/mingw-w64-x86_64.cmake (ember_DIR: a cross build
# looks for packages in the mingw root only), both; the DLL build and
# the CMake static build run a prompt on a test model under Wine. Run by the Windows build's
# ctest (scripts/test-windows.sh), with WINEPREFIX and DISPLAY set there.
set -euo pipefail
src=$EMBER_SOURCE_DIR
tmp=${EMBER_TEST_TMP:-/tmp}/package
rm -rf "$tmp"
mkdir -p "$tmp"
pass=0
fail=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
imports() { grep -q "DLL Name: $2" <<<"$(x86_64-w64-mingw32-objdump -p "$1")"; } # not a pipe: grep -q would cut it
runs() { # runs EXE: streams 32 tokens on the test model, under Wine
  local out
  out=$(cd "$(dirname "$1")" && wine "$1" "$model" "hello there" 2>&1 | tr -d '\r') || { echo "$out"; return 1; }
  grep -q "^\[32 tokens, first after [0-9]* ms\]$" <<<"$out" || { echo "$out"; return 1; }
}

zip=$(WIN_BUILD_DIR=$EMBER_BUILD_DIR bash "$src/scripts/package-windows.sh" "$tmp/ember.zip")
(cd "$tmp" && python3 -m zipfile -e "$zip" .)
pkg=$(find "$tmp" -maxdepth 1 -type d -name 'ember-*-windows-x86_64')
for f in bin/ember.exe bin/ember.dll lib/libember.dll.a lib/libember.a include/ember.h \
         lib/pkgconfig/ember.pc lib/cmake/ember/emberConfig.cmake README.txt; do
  check "the zip holds $f" test -f "$pkg/$f"
done
dump="x86_64-w64-mingw32-objdump -p"
check "ember.dll needs no mingw runtime DLL" bash -c "! $dump '$pkg/bin/ember.dll' | grep 'DLL Name: lib'"

model=$(winepath -w "$tmp/model.gguf")
check "ember.exe from the zip makes a test model" wine "$pkg/bin/ember.exe" make-test-model "$model" --dim 64 \
  --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 128

cc=x86_64-w64-mingw32-gcc-posix
embed_c=$src/examples/embed.c
mkdir -p "$tmp/dll" "$tmp/static"
check "gcc embed.c -lember (the DLL)" $cc "$embed_c" -I"$pkg/include" -L"$pkg/lib" -lember -o "$tmp/dll/embed.exe"
check "it imports ember.dll" imports "$tmp/dll/embed.exe" ember.dll
cp "$pkg/bin/ember.dll" "$tmp/dll/"
check "embed.exe with ember.dll runs" runs "$tmp/dll/embed.exe"
check "gcc -DEMBER_STATIC embed.c libember.a" $cc -DEMBER_STATIC "$embed_c" -I"$pkg/include" "$pkg/lib/libember.a" \
  -static -o "$tmp/static/embed.exe"
check "the static one imports no ember.dll" bash -c "! $dump '$tmp/static/embed.exe' | grep ember.dll"
mkdir -p "$tmp/pc"
# shellcheck disable=SC2046 # the flags are words
check "gcc embed.c \$(pkg-config --cflags --libs ember)" $cc "$embed_c" \
  $(PKG_CONFIG_PATH="$pkg/lib/pkgconfig" pkg-config --cflags --libs ember) -o "$tmp/pc/embed.exe"
check "that one imports ember.dll" imports "$tmp/pc/embed.exe" ember.dll

consumer=$tmp/consumer
check "find_package(ember) configures for Windows" cmake -S "$src/tests/install_consumer" -B "$consumer" \
  -DCMAKE_TOOLCHAIN_FILE="$src/cmake/mingw-w64-x86_64.cmake" -Dember_DIR="$pkg/lib/cmake/ember" -DEMBED_C="$embed_c" \
  -DCMAKE_BUILD_TYPE=Release -Wno-dev
check "the consumer builds" cmake --build "$consumer" -j2
check "ember::ember imports ember.dll" imports "$consumer/embed_shared.exe" ember.dll
check "ember::ember_static runs" runs "$consumer/embed_static.exe"

echo "package_windows: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
