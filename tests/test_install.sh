#!/usr/bin/env bash
# test_install.sh — `cmake --install` into a fresh prefix gives an application everything
# it needs: the header, libember.so and libember.a, the ember program, ember.pc,
# ember-static.pc and the CMake package. examples/embed.c is then built the four ways an
# application would (README's pkg-config lines, run as README writes them, with the shared
# and with the static library; find_package with either); the pkg-config builds and the
# find_package static one run a prompt on a test model, and each is checked with ldd for
# what it links.
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
check "ember-static.pc installed" test -f "$(dirname "$pc")/ember-static.pc"
check "emberConfig.cmake installed" test -f "$libdir/cmake/ember/emberConfig.cmake"
check "the installed ember reports the header's version" \
  test "$("$prefix/bin/ember" --version)" = "ember $(sed -n 's/^#define EMBER_VERSION_STRING "\(.*\)"/\1/p' "$prefix/include/ember.h")"

model=$tmp/model.gguf
"$prefix/bin/ember" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 128 >/dev/null
export PKG_CONFIG_PATH=$libdir/pkgconfig
embed_c=$EMBER_SOURCE_DIR/examples/embed.c

# README's "Install and link" recipes, run as written (from a folder whose examples/ is
# the source's): the shared build with ember.pc, the static one with ember-static.pc.
recipe() { # recipe WORD: README's `cc examples/embed.c ...` line that names WORD, comment cut
  sed -n '/^## Install and link/,/^## /p' "$EMBER_SOURCE_DIR/README.md" | grep "^cc examples/embed.c .*$1" |
    head -1 | sed 's/ *#.*//'
}
cook() { # cook LINE: runs README's line in $tmp/readme
  mkdir -p "$tmp/readme" && ln -sfn "$EMBER_SOURCE_DIR/examples" "$tmp/readme/examples"
  (cd "$tmp/readme" && eval "$1")
}
shared_line=$(recipe 'ember)')
static_line=$(recipe 'ember-static')
check "README has the shared recipe ($shared_line)" test -n "$shared_line"
check "README has the static recipe with ember-static ($static_line)" test -n "$static_line"
check "README's shared recipe builds: $shared_line" cook "$shared_line"
check "embed (libember.so) runs" runs "$tmp/readme/embed"
check "embed loads libember.so" grep -q libember.so <(LD_LIBRARY_PATH=$libdir ldd "$tmp/readme/embed")
check "README's static recipe builds: $static_line" cook "$static_line"
static_bin=$tmp/readme/$(sed -n 's/.* -o \([^ ]*\).*/\1/p' <<<"$static_line")
check "embed_static (libember.a) runs with no LD_LIBRARY_PATH" bash -c "'$static_bin' '$model' 'hello there' >/dev/null"
check "embed_static needs no libember.so (ldd)" bash -c "ldd '$static_bin' && ! ldd '$static_bin' | grep -q libember"
check "ember-static.pc names libember.a" grep -q "libember\.a" <(pkg-config --libs ember-static)

# CMake: find_package(ember), ember::ember and ember::ember_static.
consumer=$tmp/consumer
check "find_package(ember) configures" cmake -S "$EMBER_SOURCE_DIR/tests/install_consumer" -B "$consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DEMBED_C="$embed_c" -DCMAKE_BUILD_TYPE=Release -Wno-dev >/dev/null
check "the consumer builds" cmake --build "$consumer" -j2 >/dev/null
check "ember::ember links libember.so" grep -q libember.so <(LD_LIBRARY_PATH=$libdir ldd "$consumer/embed_shared")
check "ember::ember_static runs" runs "$consumer/embed_static"

# scripts/run.sh builds what README promises after it: `cmake --install build` works and
# build/demo/ember-chat is there (where SDL2 is). In a fresh build folder, with this
# build's SPIR-V (EMBER_PREBUILT_SHADERS: no glslc run), so only the C is compiled.
fresh=$tmp/run_build
cmake -S "$EMBER_SOURCE_DIR" -B "$fresh" -DCMAKE_BUILD_TYPE=Release -DEMBER_PREBUILT_SHADERS="$EMBER_BUILD_DIR/shaders" \
  >/dev/null
check "scripts/run.sh --build-only builds in a fresh folder" \
  env EMBER_RUN_BUILD="$fresh" bash "$EMBER_SOURCE_DIR/scripts/run.sh" --build-only
check "after run.sh, cmake --install works" cmake --install "$fresh" --prefix "$tmp/run_prefix"
for f in bin/ember include/ember.h; do check "after run.sh, $f installed" test -e "$tmp/run_prefix/$f"; done
check "after run.sh, libember.so and libember.a installed" \
  bash -c "ls '$tmp/run_prefix'/lib*/libember.so.* '$tmp/run_prefix'/lib*/libember.a >/dev/null"
if grep -q "^EMBER_CHAT_DEPS_FOUND:INTERNAL=1$" "$fresh/CMakeCache.txt"; then  # SDL2, SDL2_ttf, cJSON found
  check "after run.sh, demo/ember-chat is built" test -x "$fresh/demo/ember-chat"
else
  echo "SKIP: ember-chat not built here (no SDL2): not checked after run.sh"
fi
rm -rf "$fresh"

echo "test_install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
