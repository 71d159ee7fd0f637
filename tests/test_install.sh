#!/usr/bin/env bash
# test_install.sh — `cmake --install` into a fresh prefix gives an application everything
# it needs: the header, libember.so and libember.a, the ember program, ember.pc and the
# CMake package. examples/embed.c is then built the four ways an application would
# (pkg-config with the shared and with the static library, find_package with either);
# the pkg-config shared build and the find_package static one run a prompt on a test
# model (a run costs a model load), the other two are checked for what they link.
set -euo pipefail
tmp=${EMBER_TEST_TMP:-/tmp}/install
rm -rf "$tmp"
mkdir -p "$tmp"
prefix=$tmp/prefix
pass=0
fail=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
runs() { # runs BINARY: streams 32 tokens on the test model
  local out
  out=$(LD_LIBRARY_PATH=$libdir "$1" "$model" "hello there" 2>&1) || { echo "$out"; return 1; }
  grep -q "^\[32 tokens, first after [0-9]* ms\]$" <<<"$out" || { echo "$out"; return 1; }
}

cmake --install "$EMBER_BUILD_DIR" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name ember.pc)
libdir=$(dirname "$(dirname "$pc")")
check "include/ember.h installed" test -f "$prefix/include/ember.h"
check "bin/ember installed" test -x "$prefix/bin/ember"
check "libember.so installed" test -e "$libdir/libember.so"
check "libember.a installed" test -f "$libdir/libember.a"
check "ember.pc installed" test -f "$pc"
check "emberConfig.cmake installed" test -f "$libdir/cmake/ember/emberConfig.cmake"
check "the installed ember reports the header's version" \
  test "$("$prefix/bin/ember" --version)" = "ember $(sed -n 's/^#define EMBER_VERSION_STRING "\(.*\)"/\1/p' "$prefix/include/ember.h")"

model=$tmp/model.gguf
"$prefix/bin/ember" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 128 >/dev/null
export PKG_CONFIG_PATH=$libdir/pkgconfig
embed_c=$EMBER_SOURCE_DIR/examples/embed.c

# The line examples/embed.c gives.
check "cc embed.c \$(pkg-config --cflags --libs ember)" cc "$embed_c" $(pkg-config --cflags --libs ember) -o "$tmp/embed"
check "embed (libember.so) runs" runs "$tmp/embed"
check "embed loads libember.so" grep -q libember.so <(LD_LIBRARY_PATH=$libdir ldd "$tmp/embed")

# Static: Libs.private brings threads, libm and libdl.
static_libs=$(pkg-config --static --libs ember | sed 's/-lember/-Wl,-Bstatic -lember -Wl,-Bdynamic/')
check "cc embed.c with pkg-config --static" cc "$embed_c" $(pkg-config --cflags ember) $static_libs -o "$tmp/embed_static"
check "embed (libember.a) needs no libember.so" bash -c "! ldd '$tmp/embed_static' | grep -q libember"

# CMake: find_package(ember), ember::ember and ember::ember_static.
consumer=$tmp/consumer
check "find_package(ember) configures" cmake -S "$EMBER_SOURCE_DIR/tests/install_consumer" -B "$consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DEMBED_C="$embed_c" -DCMAKE_BUILD_TYPE=Release -Wno-dev >/dev/null
check "the consumer builds" cmake --build "$consumer" -j2 >/dev/null
check "ember::ember links libember.so" grep -q libember.so <(LD_LIBRARY_PATH=$libdir ldd "$consumer/embed_shared")
check "ember::ember_static runs" runs "$consumer/embed_static"

echo "test_install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
