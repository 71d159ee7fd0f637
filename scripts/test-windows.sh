#!/usr/bin/env bash
# Ember for Windows: built with mingw-w64 (cmake/mingw-w64-x86_64.cmake) and its C tests
# run under Wine, on this machine's Vulkan driver through winevulkan (docs/portability.md).
#   scripts/test-windows.sh [ctest arguments...]
# WIN_BUILD_DIR: the Windows build (default build-win). The shaders are taken from the native
# build (NATIVE_BUILD_DIR, default build) when it has them, and so is the test Vulkan layer
# (test_info). Wine needs
# an X display for Vulkan: a private Xvfb is started when DISPLAY is unset. The Wine prefix
# is made once, in the build folder, and the wineserver is kept up for the run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
WIN_BUILD_DIR=${WIN_BUILD_DIR:-build-win}
native=${NATIVE_BUILD_DIR:-build}
for tool in x86_64-w64-mingw32-gcc-posix wine Xvfb; do
  command -v "$tool" >/dev/null || { echo "test-windows: $tool is missing (scripts/setup.sh installs it)"; exit 1; }
done
prebuilt=()
[ -f "$native/shaders/ember_shaders.h" ] && prebuilt=(-DEMBER_PREBUILT_SHADERS="$(realpath "$native/shaders")")
# test_info's old-device layer is a Linux one: the native build's (tests/CMakeLists.txt)
[ -d "$native/tests/layers" ] && prebuilt+=(-DEMBER_HOST_BUILD_DIR="$(realpath "$native")")
cmake -S . -B "$WIN_BUILD_DIR" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/mingw-w64-x86_64.cmake" \
      -DCMAKE_BUILD_TYPE=Release "${prebuilt[@]}" >/dev/null
cmake --build "$WIN_BUILD_DIR" -j"$(nproc)"

export WINEPREFIX="$(realpath -m "$WIN_BUILD_DIR")/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
source tests/xvfb_fixture.sh
stop() { wineserver -k 2>/dev/null || true; xvfb_stop; }
trap stop EXIT
if [ -z "${DISPLAY:-}" ]; then
  xvfb_start || { echo "test-windows: Xvfb did not start"; exit 1; }
fi
start=$(date +%s)
mkdir -p "$WINEPREFIX"
wineserver -p  # kept up between the tests: each then starts in a fraction of a second
[ -d "$WINEPREFIX/drive_c" ] || wineboot -i </dev/null >/dev/null 2>&1
# Wine's services (services.exe, winedevice.exe, ...) start with the first program and stay;
# started here, they hold /dev/null, not the output pipe of the first test (ctest would wait
# for that pipe to close until the end of the run).
wine cmd /c exit </dev/null >/dev/null 2>&1
echo "wine prefix ready in $(( $(date +%s) - start )) s"
start=$(date +%s)
ctest --test-dir "$WIN_BUILD_DIR" --output-on-failure -j2 "$@"
echo "windows test wall time: $(( $(date +%s) - start )) s"
