#!/usr/bin/env bash
# test_header.sh — include/ember.h for every compiler an application may use: it compiles
# cleanly (-Wall -Wextra -pedantic -Werror) as C99 and C11 with gcc and clang, as C++17
# with g++ and clang++, and with mingw-w64 for Windows (ember.dll's users, dllimport, and
# the static library's, EMBER_STATIC) when x86_64-w64-mingw32-gcc is installed; every
# public struct has the same size and alignment in C and in C++ (one layout for every
# caller); EMBER_VERSION_STRING spells EMBER_VERSION_MAJOR.MINOR.PATCH; and no public
# struct holds text in a fixed-size array (text is a pointer with its owner written down:
# a fixed array cuts what does not fit, as ember_device_info.variants[1024] once did).
set -euo pipefail
src=${EMBER_SOURCE_DIR:-$(dirname "$0")/..}
tmp=${EMBER_TEST_TMP:-/tmp}/header
rm -rf "$tmp" && mkdir -p "$tmp"
pass=0 fail=0
check() { # check WHAT COMMAND...
  local what=$1
  shift
  if "$@" >"$tmp/out" 2>&1; then pass=$((pass + 1)); else echo "FAIL: $what"; cat "$tmp/out"; fail=$((fail + 1)); fi
}

# A program that prints each public struct's size and alignment, and checks the version.
structs=$(sed -n 's/^typedef struct \(ember_[a-z0-9_]*\) {.*/\1/p' "$src/include/ember.h")
{
  echo '#include <stdio.h>'
  echo '#include <string.h>'
  echo '#include "ember.h"'
  echo '#ifdef __cplusplus'
  echo '#define ALIGN(t) alignof(t)'
  echo '#else'
  echo '#include <stddef.h>'
  echo '#define ALIGN(t) offsetof(struct { char c; t x; }, x)'
  echo '#endif'
  echo 'int main(void) {'
  echo '    char v[64];'
  echo '    snprintf(v, sizeof v, "%d.%d.%d", EMBER_VERSION_MAJOR, EMBER_VERSION_MINOR, EMBER_VERSION_PATCH);'
  echo '    if (strcmp(v, EMBER_VERSION_STRING) != 0) { printf("version %s != %s\n", v, EMBER_VERSION_STRING); return 1; }'
  for s in $structs; do echo "    printf(\"$s %zu %zu\\n\", sizeof($s), (size_t)ALIGN($s));"; done
  echo '    return 0;'
  echo '}'
} >"$tmp/layout.c"
cp "$tmp/layout.c" "$tmp/layout.cpp"
n_structs=$(wc -w <<<"$structs")

flags="-Wall -Wextra -pedantic -Werror -I$src/include"
for cc in gcc clang; do
  command -v $cc >/dev/null || { echo "SKIP: $cc is not installed"; continue; }
  for std in c99 c11; do
    check "$cc -std=$std" $cc -std=$std $flags "$tmp/layout.c" -o "$tmp/layout-$cc-$std"
    check "$cc -std=$std: the layout program runs" "$tmp/layout-$cc-$std"
    "$tmp/layout-$cc-$std" >"$tmp/layout-$cc-$std.txt" || true
  done
done
for cxx in g++ clang++; do
  command -v $cxx >/dev/null || { echo "SKIP: $cxx is not installed"; continue; }
  check "$cxx -std=c++17" $cxx -std=c++17 $flags "$tmp/layout.cpp" -o "$tmp/layout-$cxx"
  "$tmp/layout-$cxx" >"$tmp/layout-$cxx.txt" || true
done
ref=$tmp/layout-gcc-c11.txt
check "the layout lists every public struct ($n_structs)" test "$(wc -l <"$ref")" -eq "$n_structs"
for t in "$tmp"/layout-*.txt; do
  check "$(basename "$t" .txt): the same sizes and alignments as gcc C11" cmp "$ref" "$t"
done
if command -v x86_64-w64-mingw32-gcc >/dev/null; then
  printf '#include "ember.h"\nconst char *version(void) { return ember_version(); }\n' >"$tmp/call.c"
  check "mingw-w64 compiles the layout program" x86_64-w64-mingw32-gcc -std=c11 $flags -c "$tmp/layout.c" -o "$tmp/layout.o"
  check "mingw-w64, a DLL user (dllimport)" x86_64-w64-mingw32-gcc -std=c11 $flags -c "$tmp/call.c" -o "$tmp/dll.o"
  check "the DLL user imports (__imp_ember_version)" bash -c "x86_64-w64-mingw32-nm '$tmp/dll.o' | grep -q ' U __imp_ember_version'"
  check "mingw-w64, a static user (EMBER_STATIC)" x86_64-w64-mingw32-gcc -std=c11 -DEMBER_STATIC $flags -c "$tmp/call.c" -o "$tmp/static.o"
  check "the static user calls ember_version directly" bash -c "x86_64-w64-mingw32-nm '$tmp/static.o' | grep -q ' U ember_version'"
else
  echo "SKIP: no x86_64-w64-mingw32-gcc (Debian: gcc-mingw-w64-x86-64-posix): the Windows checks"
fi
# Fixed-size text: a char array member of a public struct.
fixed_text() { ! grep -nE '^[[:space:]]+(const[[:space:]]+)?char[[:space:]]+[a-z_0-9]+\[' "$src/include/ember.h"; }
check "no fixed-size text in ember.h's structs" fixed_text

echo "test_header: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
