#!/usr/bin/env bash
# Ember for Windows as a zip: ember.exe, ember.dll, its import library (libember.dll.a),
# the static library (libember.a), include/ember.h, the pkg-config and CMake package files
# and a README, from the mingw-w64 build (cmake/mingw-w64-x86_64.cmake).
#   scripts/package-windows.sh [OUT.zip]     default: WIN_BUILD_DIR/ember-VERSION-windows-x86_64.zip
# WIN_BUILD_DIR (default build-win) is configured and built first if it is not yet.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
WIN_BUILD_DIR=${WIN_BUILD_DIR:-build-win}
if [ ! -f "$WIN_BUILD_DIR/CMakeCache.txt" ]; then
  prebuilt=()
  [ -f build/shaders/ember_shaders.h ] && prebuilt=(-DEMBER_PREBUILT_SHADERS="$root/build/shaders")
  cmake -S . -B "$WIN_BUILD_DIR" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/mingw-w64-x86_64.cmake" \
        -DCMAKE_BUILD_TYPE=Release "${prebuilt[@]}" >/dev/null
fi
cmake --build "$WIN_BUILD_DIR" -j"$(nproc)" --target ember ember_shared ember_static >/dev/null
version=$(sed -n 's/^#define EMBER_VERSION_STRING "\(.*\)"/\1/p' include/ember.h)
name=ember-$version-windows-x86_64
out=$(realpath -m "${1:-$WIN_BUILD_DIR/$name.zip}")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cmake --install "$WIN_BUILD_DIR" --prefix "$stage/$name" --strip >/dev/null
cat > "$stage/$name/README.txt" <<TXT
Ember $version for Windows x86-64, built with mingw-w64 (gcc) on Debian.

bin/ember.exe        the command-line program (\`ember.exe --help\`); no \`serve\` in this build
bin/ember.dll        the library; needs a Vulkan driver (vulkan-1.dll), loaded at run time
lib/libember.dll.a   import library of ember.dll (mingw-w64; MSVC's link.exe reads it too)
lib/libember.a       static library: compile with -DEMBER_STATIC
include/ember.h      the API (C99, C++ too)
lib/pkgconfig/ember.pc, lib/cmake/ember/   find it with pkg-config or find_package(ember)
                     (cross-compiling: -Dember_DIR=.../lib/cmake/ember)

A DLL user: gcc app.c -Iinclude -Llib -lember, with ember.dll beside app.exe.
A static user: gcc -DEMBER_STATIC app.c -Iinclude lib/libember.a
Tested under Wine on Mesa's lavapipe, not on a Windows driver: see docs/portability.md.
TXT
rm -f "$out"
(cd "$stage" && python3 -m zipfile -c "$out" "$name")
echo "$out"
