#!/usr/bin/env bash
# bench/gpu-check.sh — Ember on a machine with a GPU, in one prepared command (issues 14, 23):
# check the prerequisites, build, run the test suite, then measure and write ONE Markdown
# table (docs/benchmarks.md, "bench/gpu-check.sh").
#
# Here (Debian 12, network for apt-get and npm): gather what a bare GPU machine lacks —
# the Vulkan loader and headers, libglvnd and the X libraries the NVIDIA ICD loads, PCRE2
# and pkg-config (.debs), the compiled SPIR-V, and optionally llama.cpp's prebuilt Vulkan
# build with a llama-bench built here against it:
#   bench/gpu-check.sh --prepare DIR
# There (x86-64, CMake, a C compiler, the GPU's Vulkan driver; no glslc, loader, headers
# or network needed):
#   bash bench/gpu-check.sh [--deps DIR] [--small] [--out FILE] [--build DIR] [--runs N]
#                           [--tests LABELS] [--test-time S] [--no-tests] [--no-llama] [--budget S]
# --small shrinks every model and length so that the whole run fits a few minutes on
# lavapipe (how it is checked without a GPU). Everything the run prints goes to stderr as
# it goes; the report (device, table) goes to stdout and --out; the test log and every raw
# JSON line go beside --out (NAME-tests.log, NAME-raw.log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARCH_TRIPLET=x86_64-linux-gnu
T0=$(date +%s)

# Runtime libraries the run needs in the system's library path (soname:package): the
# Vulkan loader, libglvnd (the NVIDIA ICD, libGLX_nvidia.so.0, links it) and the X
# libraries below it, and PCRE2. Each is unpacked into / only where ldconfig lacks it.
RUNTIME_LIBS=(libvulkan.so.1:libvulkan1 libGLdispatch.so.0:libglvnd0 libEGL.so.1:libegl1 libGL.so.1:libgl1
  libGLX.so.0:libglx0 libGLESv2.so.2:libgles2 libOpenGL.so.0:libopengl0 libX11.so.6:libx11-6 libxcb.so.1:libxcb1
  libXau.so.6:libxau6 libXdmcp.so.6:libxdmcp6 libbsd.so.0:libbsd0 libmd.so.0:libmd0 libXext.so.6:libxext6
  libpcre2-8.so.0:libpcre2-8-0)
# Build-time packages, unpacked into a private prefix of the build directory (never /):
# headers, the .so links, .pc files, and pkg-config itself.
DEV_PACKAGES=(libvulkan1 libvulkan-dev libpcre2-8-0 libpcre2-dev pkgconf pkgconf-bin libpkgconf3)
LLAMA_NPM_VERSION=3.21.1

# Tests left out of the run, with why (ctest -E). The _sg4/_sg16 copies set
# LP_NATIVE_VECTOR_WIDTH, which only lavapipe reads: elsewhere they repeat the base test.
EXCLUDED_TESTS=(
  "test_server test_bench_url test_deploy test_openai_client|need ember serve, which EMBER_MINIMAL leaves out"
  "test_game_loop|needs SDL2 (not built with EMBER_MINIMAL)"
  "test_install|installs and builds a consumer through pkg-config: no GPU part"
  "test_get_model|needs curl: no GPU part"
  "*_sg4 *_sg16|lavapipe's subgroup widths (LP_NATIVE_VECTOR_WIDTH): repeats of the base tests elsewhere")
EXCLUDE_REGEX='^(test_server|test_bench_url|test_deploy|test_openai_client|test_game_loop|test_install|test_get_model)$|_sg(4|16)$'

log() { printf 'gpu-check: %s\n' "$*" >&2; }
die() { printf 'gpu-check: ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { echo $(($(date +%s) - T0)); }

usage() {
  sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ==== --prepare (here) ===================================================================

# The .debs of RUNTIME_LIBS and DEV_PACKAGES for amd64 (Debian 12, this machine's sources),
# with package lists of their own so that this works from any architecture.
prepare_debs() {
  local dir=$1/debs lists=/tmp/gpu-check-apt-amd64
  local o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists" -oAPT::Sandbox::User=root)
  local pkgs=() p
  for p in "${RUNTIME_LIBS[@]}"; do pkgs+=("${p#*:}"); done
  pkgs+=("${DEV_PACKAGES[@]}")
  mkdir -p "$dir" "$lists/partial"
  log "apt-get update (amd64 lists in $lists)"
  apt-get "${o[@]}" update >/dev/null || die "apt-get update failed"
  log "apt-get download: $(printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' ')"
  (cd "$dir" && rm -f ./*.deb && apt-get "${o[@]}" download $(printf '%s\n' "${pkgs[@]}" | sort -u) >/dev/null) ||
    die "apt-get download failed"
}

# The SPIR-V of every shader variant (glslc here, through the build's own rule: the
# ember_shaders target), with the checksums of the sources it was made from.
prepare_shaders() {
  local dir=$1/shaders build=$2/prepare
  command -v glslc >/dev/null || die "glslc is missing (apt-get install glslc)"
  log "compiling the shaders (cmake --build $build --target ember_shaders)"
  cmake -S "$ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release -DEMBER_MINIMAL=ON -DEMBER_PREBUILT_SHADERS= -DBUILD_TESTING=OFF \
    >"$2/prepare.log" 2>&1 ||
    die "cmake configure failed: $2/prepare.log"
  cmake --build "$build" --target ember_shaders -j2 >>"$2/prepare.log" 2>&1 || die "shader build failed: $2/prepare.log"
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$build"/shaders/*.spv.inc "$dir"/
  shader_sums >"$dir/SOURCES.sha256"
  echo "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" >"$dir/COMMIT"
  log "$(ls "$dir"/*.spv.inc | wc -l) shader variants -> $dir.tar.xz"
  # as hex text they outgrow what a device run carries (64 MiB): packed, about a tenth
  tar -C "$1" -cJf "$dir.tar.xz" shaders && rm -rf "$dir"
}

shader_sums() { (cd "$ROOT" && sha256sum shaders/*.comp shaders/*.glsl shaders/types/*.glsl shaders/shaders.cmake cmake/spirv_coopmat_khr.py); }

# llama.cpp's prebuilt Vulkan libraries (npm @node-llama-cpp/linux-x64-vulkan) and a
# llama-bench compiled here from the same release's source (the git bundle inside
# node-llama-cpp), against those libraries, packed with xz. Optional: any failure is
# reported and the rest of --prepare goes on.
prepare_llama() {
  local out=$1 tmp
  rm -f "$out/llama-cpp.tar.xz" "$out/llama-cpp.txt"
  for t in npm g++ git xz; do
    command -v $t >/dev/null || { log "llama.cpp: skipped ($t is missing)"; echo "skipped: $t missing" >"$out/llama-cpp.txt"; return 0; }
  done
  tmp=$(mktemp -d /tmp/gpu-check-llama.XXXXXX)
  # In the background so that set -e holds inside (it is off in an if's subshell).
  (prepare_llama_in "$tmp" "$out") >"$tmp.log" 2>&1 &
  if ! wait $!; then
    log "llama.cpp: skipped (failed: see $tmp.log)"
    echo "skipped: --prepare failed ($(tail -1 "$tmp.log"))" >"$out/llama-cpp.txt"
    rm -f "$out/llama-cpp.tar.xz"
  fi
  rm -rf "$tmp"
}

prepare_llama_in() {
  local tmp=$1 out=$2 bins src
  set -x
  cd "$tmp"
  npm pack --silent "@node-llama-cpp/linux-x64-vulkan@$LLAMA_NPM_VERSION" "node-llama-cpp@$LLAMA_NPM_VERSION"
  mkdir bins-pkg main-pkg
  tar xzf node-llama-cpp-linux-x64-vulkan-*.tgz -C bins-pkg
  tar xzf node-llama-cpp-"$LLAMA_NPM_VERSION".tgz -C main-pkg
  bins=$tmp/bins-pkg/package/bins/linux-x64-vulkan
  git clone -q main-pkg/package/llama/gitRelease.bundle src
  src=$tmp/src
  mkdir -p pack/llama-cpp
  cp "$bins"/*.so "$bins"/_nlcBuildMetadata.json pack/llama-cpp/
  g++ -std=c++17 -O2 -DNDEBUG -w -I "$src/include" -I "$src/ggml/include" -I "$src/common" -I "$src/vendor" \
    "$src/tools/llama-bench/llama-bench.cpp" "$src/tools/llama-bench/main.cpp" -o pack/llama-cpp/llama-bench \
    -Lpack/llama-cpp -l:libllama-common.so -l:libllama.vulkan.v0.4.0.so -l:libggml.vulkan.v0.4.0.so \
    -l:libggml-base.so -Wl,-rpath,'$ORIGIN' -pthread
  ./pack/llama-cpp/llama-bench --help >/dev/null  # it links and starts
  echo "node-llama-cpp $LLAMA_NPM_VERSION, llama.cpp $(git -C "$src" log -1 --format='%h %cd' --date=short)" \
    >pack/llama-cpp/VERSION
  tar cf - -C pack llama-cpp | xz -6 -T0 >"$out/llama-cpp.tar.xz"
  cat pack/llama-cpp/VERSION >"$out/llama-cpp.txt"
}

prepare() {
  local dir=$1 build=$2
  command -v apt-get >/dev/null || die "--prepare runs on Debian (apt-get)"
  command -v cmake >/dev/null || die "cmake is missing"
  mkdir -p "$dir" "$build"
  dir=$(cd "$dir" && pwd)
  prepare_debs "$dir"
  prepare_shaders "$dir" "$build"
  log "llama.cpp (npm node-llama-cpp@$LLAMA_NPM_VERSION, its prebuilt Vulkan build; about a minute)"
  prepare_llama "$dir"
  log "llama.cpp: $(cat "$dir/llama-cpp.txt")"
  log "prepared $dir: $(du -sh "$dir" | cut -f1) ($(du -sb "$dir" | cut -f1) bytes)"
  case $dir in
    "$ROOT"/*) log "on the device machine: carry '${dir#"$ROOT"/}' (it is git-ignored) and run" \
                   "bash bench/gpu-check.sh --deps ${dir#"$ROOT"/} --out \$OUT/gpu-check.md" ;;
  esac
}

# ==== the run (there) ====================================================================

LDCACHE=""
refresh_ldcache() { LDCACHE=$(ldconfig -p 2>/dev/null || true); }
have_lib() { awk -v s="$1" '$1 == s {f = 1} END {exit !f}' <<<"$LDCACHE"; }
deb_of() { # DEPS PACKAGE -> the .deb file (package names are followed by _VERSION)
  local f
  for f in "$1"/debs/"$2"_*.deb; do [ -f "$f" ] && { echo "$f"; return 0; }; done
  return 1
}
unpack_deb() { # DEB DEST
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else  # ar (binutils) and tar; data.tar is xz or zstd in Debian 12
    local m; m=$(ar t "$1" | grep '^data\.tar')
    case $m in
      *.xz) ar p "$1" "$m" | tar -xJ -C "$2" ;;
      *.zst) ar p "$1" "$m" | zstd -dc | tar -x -C "$2" ;;
      *.gz) ar p "$1" "$m" | tar -xz -C "$2" ;;
      *) die "cannot unpack $1 (no dpkg-deb, data member $m)" ;;
    esac
  fi
}

# The libraries of RUNTIME_LIBS that the system lacks, unpacked from DEPS into /.
install_runtime_libs() {
  local deps=$1 p so pkg deb missing=() installed=()
  refresh_ldcache
  for p in "${RUNTIME_LIBS[@]}"; do
    so=${p%%:*} pkg=${p#*:}
    have_lib "$so" && continue
    missing+=("$so")
    [ -n "$deps" ] || continue
    deb=$(deb_of "$deps" "$pkg") || die "$so is missing and $deps/debs has no $pkg .deb (run --prepare again)"
    unpack_deb "$deb" / && installed+=("$pkg")
  done
  if [ ${#installed[@]} -gt 0 ]; then
    ldconfig
    refresh_ldcache
    log "unpacked into /: ${installed[*]}"
  fi
  for so in "${missing[@]}"; do
    have_lib "$so" || die "$so is missing from the system's libraries (give --deps DIR from --prepare)"
  done
}

# The GPU's ICD: VK_DRIVER_FILES / VK_ICD_FILENAMES when set, else NVIDIA's where the
# driver puts it. Without one (--small, or another vendor) the loader's own search runs.
find_icd() {
  local f
  if [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
    log "Vulkan ICD: ${VK_DRIVER_FILES:-$VK_ICD_FILENAMES} (from the environment)"
    return 0
  fi
  for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$f" ]; then
      export VK_DRIVER_FILES=$f
      log "Vulkan ICD: $f"
      return 0
    fi
  done
  if [ "$SMALL" = 1 ]; then
    log "Vulkan ICD: no NVIDIA ICD; the loader's default search (lavapipe here)"
  elif compgen -G '/usr/share/vulkan/icd.d/*.json' >/dev/null || compgen -G '/etc/vulkan/icd.d/*.json' >/dev/null; then
    log "WARNING: no NVIDIA ICD found; the loader's default search: $(compgen -G '/usr/share/vulkan/icd.d/*.json' | tr '\n' ' ')$(compgen -G '/etc/vulkan/icd.d/*.json' | tr '\n' ' ')"
  else
    die "no Vulkan ICD for the GPU: looked for nvidia_icd.json in /usr/local/nvidia/share/vulkan/icd.d," \
        "/usr/share/vulkan/icd.d and /etc/vulkan/icd.d; set VK_DRIVER_FILES to the driver's ICD json"
  fi
}

# What the build needs that the system lacks, from DEPS into PREFIX ($BUILD/deps-root):
# Vulkan headers and libvulkan.so, PCRE2's headers and .pc, pkg-config. Sets CMAKE_ARGS.
setup_build_deps() {
  local deps=$1 prefix=$2 need=() pkg deb pc
  CMAKE_ARGS=()
  if [ "$FORCE_DEPS" = 1 ] || [ ! -f /usr/include/vulkan/vulkan.h ] || ! have_lib libvulkan.so; then
    need+=(libvulkan1 libvulkan-dev)
  fi
  if [ "$FORCE_DEPS" = 1 ] || ! command -v pkg-config >/dev/null; then need+=(pkgconf pkgconf-bin libpkgconf3); fi
  if [ "$FORCE_DEPS" = 1 ] || ! { command -v pkg-config >/dev/null && pkg-config --exists libpcre2-8; }; then
    need+=(libpcre2-8-0 libpcre2-dev)
  fi
  [ ${#need[@]} -eq 0 ] && { log "build dependencies: all installed"; return 0; }
  [ -n "$deps" ] || die "missing for the build: ${need[*]} (give --deps DIR from --prepare)"
  rm -rf "$prefix" && mkdir -p "$prefix"
  for pkg in "${need[@]}"; do
    deb=$(deb_of "$deps" "$pkg") || die "$deps/debs has no $pkg .deb (run --prepare again)"
    unpack_deb "$deb" "$prefix"
  done
  log "build dependencies from $deps, unpacked into $prefix: ${need[*]}"
  local lib=$prefix/usr/lib/$ARCH_TRIPLET
  for pc in "$lib"/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" "$pc"
  done
  export PKG_CONFIG_PATH=$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  if [ -x "$prefix/usr/bin/pkgconf" ]; then
    mkdir -p "$prefix/bin"
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$lib" "$prefix/usr/bin/pkgconf" >"$prefix/bin/pkg-config"
    chmod +x "$prefix/bin/pkg-config"
    CMAKE_ARGS+=("-DPKG_CONFIG_EXECUTABLE=$prefix/bin/pkg-config")
  fi
  if [ -f "$prefix/usr/include/vulkan/vulkan.h" ]; then
    CMAKE_ARGS+=("-DVulkan_INCLUDE_DIR=$prefix/usr/include" "-DVulkan_LIBRARY=$lib/libvulkan.so")
  fi
}

# glslc when the system has it (and no --deps shaders are forced), else the prebuilt
# SPIR-V from --prepare, checked against the shader sources it was made from.
setup_shaders() {
  local deps=$1
  if [ "$FORCE_DEPS" != 1 ] && command -v glslc >/dev/null; then
    log "SPIR-V: glslc $(command -v glslc)"
    return 0
  fi
  if [ -n "$deps" ] && [ -f "$deps/shaders.tar.xz" ] && [ ! -d "$deps/shaders" ]; then
    tar -C "$deps" -xJf "$deps/shaders.tar.xz" || die "cannot unpack $deps/shaders.tar.xz"
  fi
  [ -n "$deps" ] && [ -f "$deps/shaders/SOURCES.sha256" ] ||
    die "no glslc and no prebuilt SPIR-V (give --deps DIR from --prepare, which compiles the shaders)"
  if ! diff -q <(shader_sums) "$deps/shaders/SOURCES.sha256" >/dev/null; then
    die "shaders/ changed since --prepare made $deps/shaders (commit $(cat "$deps/shaders/COMMIT")): run --prepare again"
  fi
  CMAKE_ARGS+=("-DEMBER_PREBUILT_SHADERS=$deps/shaders")
  log "SPIR-V: prebuilt in $deps/shaders (commit $(cat "$deps/shaders/COMMIT"), sources unchanged)"
}

check_tools() {
  local v
  command -v cmake >/dev/null || die "cmake is missing"
  v=$(cmake --version | awk 'NR==1 {print $3}')
  awk -v v="$v" 'BEGIN {split(v, a, "."); exit !(a[1] > 3 || (a[1] == 3 && a[2] >= 20))}' ||
    die "cmake $v is too old (3.20 or newer)"
  CC=${CC:-$(command -v cc || command -v gcc || true)}
  [ -n "$CC" ] || die "no C compiler (cc or gcc)"
  export CC
  if command -v ninja >/dev/null; then GENERATOR=Ninja
  elif command -v make >/dev/null; then GENERATOR="Unix Makefiles"
  else die "neither ninja nor make is installed (CMake needs one)"; fi
  HAVE_PYTHON=1
  command -v python3 >/dev/null || HAVE_PYTHON=0
  command -v ldconfig >/dev/null || die "ldconfig is missing"
  log "tools: cmake $v, $CC ($("$CC" -dumpversion)), $GENERATOR, python3 $([ $HAVE_PYTHON = 1 ] && python3 -V 2>&1 | cut -d' ' -f2 || echo 'missing: no tests')"
}

build() {
  local nproc_; nproc_=$(nproc)
  # A build directory configured otherwise (another source tree, other dependencies)
  # starts afresh: CMake would keep its cached paths.
  local args="$ROOT $GENERATOR ${CMAKE_ARGS[*]}"
  if [ "$(cat "$BUILD/ember/.gpu-check-args" 2>/dev/null)" != "$args" ]; then rm -rf "$BUILD/ember"; fi
  log "configure: cmake -S . -B $BUILD/ember -G '$GENERATOR' -DCMAKE_BUILD_TYPE=Release -DEMBER_MINIMAL=ON ${CMAKE_ARGS[*]}"
  cmake -S "$ROOT" -B "$BUILD/ember" -G "$GENERATOR" -DCMAKE_BUILD_TYPE=Release -DEMBER_MINIMAL=ON \
    -DBUILD_TESTING=$([ "$HAVE_PYTHON" = 1 ] && echo ON || echo OFF) "${CMAKE_ARGS[@]}" >"$BUILD/configure.log" 2>&1 ||
    { tail -30 "$BUILD/configure.log" >&2; die "cmake configure failed ($BUILD/configure.log)"; }
  printf '%s' "$args" >"$BUILD/ember/.gpu-check-args"
  log "build: cmake --build $BUILD/ember -j$nproc_"
  local t; t=$(date +%s)
  cmake --build "$BUILD/ember" -j"$nproc_" >"$BUILD/build.log" 2>&1 ||
    { grep -E 'error|Error' "$BUILD/build.log" | head -20 >&2; die "build failed ($BUILD/build.log)"; }
  BUILD_S=$(($(date +%s) - t))
  EMBER=$BUILD/ember/ember
  log "built in ${BUILD_S} s"
}

# ---- the test suite ---------------------------------------------------------------------

# ctest -L TEST_LABELS ("unit|gpu|cli"; --small: unit) without EXCLUDED_TESTS, the whole
# at most TEST_TIME s (timeout ends ctest and the tests it runs); fills TESTS_ROW (the
# table's summary) and writes the log.
run_tests() {
  TESTS_ROW="not run"
  if [ "$NO_TESTS" = 1 ]; then TESTS_ROW="not run (--no-tests)"; return 0; fi
  if [ "$HAVE_PYTHON" = 0 ]; then TESTS_ROW="not run: no python3 (tests/CMakeLists.txt needs it)"; return 0; fi
  local dir=$BUILD/ember log=$TEST_LOG listed rc=0 t
  local args=(-L "$TEST_LABELS" -E "$EXCLUDE_REGEX")
  listed=$(cd "$dir" && ctest -N "${args[@]}" | awk '/Test +#[0-9]+: /{print $3}')
  log "tests: $(wc -w <<<"$listed") programs, ctest -j$(nproc), at most $TEST_TIME s in all ($log)"
  t=$(date +%s)
  (cd "$dir" && timeout --signal=TERM --kill-after=10 "$TEST_TIME" \
     ctest -j"$(nproc)" "${args[@]}" --output-on-failure) >"$log" 2>&1 || rc=$?
  TESTS_S=$(($(date +%s) - t))
  # "  3/35 Test #14: test_kernels .........***Failed   2.01 sec"
  local passed failed skipped unfinished
  passed=$(awk '/ Test +#[0-9]+: /{ if ($0 ~ /  Passed  /) print $4 }' "$log" | sort)
  skipped=$(awk '/ Test +#[0-9]+: /{ if ($0 ~ /\*\*\*Skipped|Not Run/) print $4 }' "$log" | sort)
  failed=$(awk '/ Test +#[0-9]+: /{ if ($0 ~ /\*\*\*(Failed|Timeout|Exception)|Exit code|SEGFAULT|Child aborted/) {
                   s = $0; sub(/.*\*\*\*/, "", s); split(s, w, " "); print $4 " (" w[1] ")" } }' "$log" | sort)
  unfinished=$(comm -23 <(sort <<<"$listed") <(printf '%s\n' $passed $skipped $(sed 's/ (.*//' <<<"$failed") | sort))
  local n_p n_f n_s n_u
  n_p=$(wc -w <<<"$passed"); n_f=$(grep -c . <<<"$failed" || true); n_s=$(wc -w <<<"$skipped")
  n_u=$(wc -w <<<"$unfinished")
  TESTS_ROW="$n_p passed, $n_f failed"
  [ "$n_f" -gt 0 ] && TESTS_ROW+=": $(paste -sd, <<<"$failed" | sed 's/,/, /g')"
  [ "$n_s" -gt 0 ] && TESTS_ROW+="; $n_s skipped ($(echo $skipped | sed 's/ /, /g'))"
  [ "$n_u" -gt 0 ] && TESTS_ROW+="; $n_u not finished in the ${TEST_TIME} s limit ($(echo $unfinished | sed 's/ /, /g'))"
  TESTS_ROW+="; ${TESTS_S} s"
  log "tests: $TESTS_ROW (ctest exit $rc)"
}

# ---- measurements -----------------------------------------------------------------------

# The first number after "NAME": in a JSON line; with SUB, the first after "SUB": inside
# NAME's object ("ttft_ms": {"p50": ...}).
jnum() { # NAME JSON [SUB]
  awk -v k="\"$1\": " -v sk="${3:+\"$3\": }" '{
    i = index($0, k); if (!i) exit; s = substr($0, i + length(k))
    if (sk != "") { j = index(s, sk); if (!j) exit; s = substr(s, j + length(sk)) }
    if (match(s, /^-?[0-9.]+([eE][-+]?[0-9]+)?/)) print substr(s, 1, RLENGTH); exit }' <<<"$2"
}
median() { printf '%s\n' "$@" | awk NF | sort -g | awk '{a[NR] = $1} END {if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
fmt() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else if (x >= 100) printf "%.0f", x; else if (x >= 10) printf "%.1f", x; else printf "%.2f", x }'; }
now_ms() { date +%s%3N; }
over_budget() { [ "$(elapsed)" -ge "$BUDGET" ]; }

# Runs `ember ARGS... --json`, keeps the line in the raw log, prints it; empty on failure.
ember_json() {
  local out
  if out=$(EMBER_VALIDATION=0 "$EMBER" "$@" --json 2>>"$RAW_LOG.stderr"); then
    printf '%s\n' "\$ ember $* --json" "$out" >>"$RAW_LOG"
    printf '%s\n' "$out" | awk '/^\{/ {l = $0} END {if (l != "") print l}'
  else
    printf '%s\n' "\$ ember $* --json: FAILED (exit $?)" >>"$RAW_LOG"
    log "FAILED: ember $* (stderr in $RAW_LOG.stderr)"
  fi
}

# A prompt of exactly N tokens (BOS included) for MODEL: "the" repeated, checked with
# `ember tokenize` (every test model of one vocabulary size has the same pieces).
make_prompt() { # MODEL N
  local words=$(($2 - 1)) text n
  for _ in 1 2 3; do
    text=$(printf 'the %.0s' $(seq "$words")); text=${text% }
    n=$(EMBER_VALIDATION=0 "$EMBER" tokenize -m "$1" -p "$text" --json | tr ',' '\n' | grep -c '[0-9]')
    [ "$n" -eq "$2" ] && break
    words=$((words + $2 - n))
  done
  printf '%s' "$text"
}

# Models A (1B-class) and B (8B-class) in each of TYPES, T (stories260K's shape, for the
# fixed costs of a step) in F32, and A in F32 (the speculative target) with its Q8_0
# quantized copy (the draft): made in the background (they only need the CPU; make-test-
# model uses a thread per core), the ones measured first started first.
start_models() {
  MODELS_DIR=$BUILD/models-$SIZE_TAG
  mkdir -p "$MODELS_DIR"
  local m t
  declare -gA MODEL_PID
  make_model T f32 "$MODELS_DIR/T-f32.gguf" & MODEL_PID[T-f32]=$!
  for t in $TYPES; do
    for m in B A; do
      make_model "$m" "$t" "$MODELS_DIR/$m-$t.gguf" & MODEL_PID[$m-$t]=$!
    done
  done
  (make_model A f32 "$MODELS_DIR/A-f32.gguf" &&
   { [ -f "$MODELS_DIR/A-f32-draft-q8_0.gguf" ] ||
     "$EMBER" quantize "$MODELS_DIR/A-f32.gguf" "$MODELS_DIR/A-f32-draft-q8_0.gguf" q8_0 >/dev/null; }) &
  MODEL_PID[A-f32]=$!
}
make_model() { # A|B|T TYPE OUT
  [ -f "$3" ] && return 0
  local shape
  case $1 in A) shape=$SHAPE_A ;; B) shape=$SHAPE_B ;; T) shape=$SHAPE_T ;; esac
  "$EMBER" make-test-model "$3.part" $shape --ctx "$CTX" --type "$2" --seed 1 >/dev/null && mv "$3.part" "$3"
}
# Waits for model NAME (A-q8_0, ...) to be made; fails when making it failed.
need_model() { # NAME
  local pid=${MODEL_PID[$1]:-}
  [ -n "$pid" ] || return 0
  wait "$pid" || { log "FAILED: making model $1 ($MODELS_DIR)"; MODEL_PID[$1]=""; return 1; }
  MODEL_PID[$1]=""
}

ROWS=()
row() { ROWS+=("| $1 | $2 | $3 | $4 | $5 |"); }

# The card's memory bandwidth as a buffer copy measures it (bench/gpu_check/copy_bandwidth.c,
# compiled here against the Vulkan headers and loader Ember was built with): COPY_GBS.
bench_copy() {
  local inc=() lib=() prefix=$BUILD/deps-root out
  [ -f "$prefix/usr/include/vulkan/vulkan.h" ] && inc=(-I "$prefix/usr/include")
  [ -f "$prefix/usr/lib/$ARCH_TRIPLET/libvulkan.so" ] && lib=(-L "$prefix/usr/lib/$ARCH_TRIPLET")
  if ! "$CC" -O2 -o "$BUILD/copy_bandwidth" "$ROOT/bench/gpu_check/copy_bandwidth.c" "${inc[@]}" "${lib[@]}" \
       -lvulkan 2>"$BUILD/copy_bandwidth.log"; then
    COPY_NOTE="not measured: compiling bench/gpu_check/copy_bandwidth.c failed"; log "$COPY_NOTE"; return 0
  fi
  out=$("$BUILD/copy_bandwidth" ${EMBER_DEVICE:-} 2>>"$RAW_LOG.stderr") || { COPY_NOTE="copy_bandwidth failed"; return 0; }
  printf '%s\n' "\$ copy_bandwidth" "$out" >>"$RAW_LOG"
  COPY_GBS=$(jnum gb_s "$out")
  COPY_CELL="$(fmt "$COPY_GBS") GB/s"
  COPY_NOTE="vkCmdCopyBuffer of $(jnum bytes "$out") bytes x $(jnum copies "$out") between device-local buffers; read + write counted"
  log "copy bandwidth: $COPY_CELL"
}

# Prompt processing (PP tokens in one step) and then decode (TG tokens) in one run, as
# llama-bench's ppN and tgN: medians of RUNS runs.
bench_pp_tg() { # NAME FILE
  local name=$1 m=$2 pp=() tg=() j prompt
  prompt=$(make_prompt "$m" "$PP")
  for _ in $(seq "$RUNS"); do
    j=$(ember_json generate -m "$m" -p "$prompt" -n "$TG" --ignore-eos --max-batch-tokens "$PP")
    [ -n "$j" ] && [ "$(jnum n_prompt "$j")" = "$PP" ] || continue
    pp+=("$(jnum prefill_tok_s "$j")"); tg+=("$(jnum decode_tok_s "$j")")
  done
  PP_RESULT[$name]=$(median "${pp[@]}")
  TG_RESULT[$name]=$(median "${tg[@]}")
  log "$name: prompt $PP tokens $(fmt "${PP_RESULT[$name]}") tok/s, decode $TG tokens $(fmt "${TG_RESULT[$name]}") tok/s"
}

# One decode of PROFILE_TG tokens with --profile (docs/profiling.md): its tables for the
# report, and the weights a decode token reads (WEIGHT_MB) for the share of the copy
# bandwidth that decode reaches.
bench_profile() { # NAME FILE
  local name=$1 m=$2 out=$BUILD/profile-$1.txt
  if ! EMBER_VALIDATION=0 "$EMBER" generate -m "$m" -p the -n "$PROFILE_TG" --ignore-eos --profile \
       >/dev/null 2>"$out"; then
    log "FAILED: ember generate --profile on $name ($out)"; return 0
  fi
  PROFILED+=("$name")
  WEIGHT_MB[$name]=$(sed -n 's/^  weights .* MB a step, \([0-9.]*\) MB a token;.*/\1/p' "$out" | tail -n1)
  log "$name: profiled; decode reads ${WEIGHT_MB[$name]} MB a token"
}

# Decode's share of the copy bandwidth: tok/s x MB a token over the copy's GB/s.
roofline() { # NAME
  awk -v t="${TG_RESULT[$1]:-}" -v w="${WEIGHT_MB[$1]:-}" -v c="${COPY_GBS:-}" \
    'BEGIN { if (t == "" || w == "" || c == "" || c <= 0) print "-"; else printf "%.0f%%", 100 * t * w / (c * 1000) }'
}

# Batched decode: N requests of a 16-token prompt and TG_BATCH new tokens each, all at once
# (ember bench, continuous batching): output tokens per second over the whole run.
bench_batched() { # NAME FILE
  local name=$1 m=$2 n j cells=() tpot=() tps=()
  for n in 1 16 64; do
    j=$(ember_json bench -m "$m" --requests "$n" --rate inf --prompt-len 16:16 --gen-len "$TG_BATCH:$TG_BATCH" \
        --max-seqs 64 --seed 1)
    tps+=("$(jnum throughput_tok_s "$j")")
    cells+=("$(fmt "${tps[-1]}")")
    tpot+=("$(fmt "$(jnum tpot_ms "$j" p50)")")
  done
  local x16; x16=$(awk -v a="${tps[1]}" -v b="${tps[0]}" 'BEGIN { if (a != "" && b > 0) printf "%.1fx", a / b; else print "-" }')
  BATCH_RESULT[$name]="${cells[0]} / ${cells[1]} / ${cells[2]}; 16 streams **$x16** one (TPOT p50 ${tpot[0]} / ${tpot[1]} / ${tpot[2]} ms)"
  log "$name: batched decode 1/16/64: ${BATCH_RESULT[$name]}"
}

# Sampled decode: 64 requests sampling top-k 40 at temperature 1, each row's 256 best
# candidates picked on the GPU against whole rows of logits read back (docs/sampling.md):
# the same tokens, 2 KiB against 4 x n_vocab bytes a row.
bench_sampled() { # NAME FILE
  local name=$1 m=$2 from j cells=()
  for from in candidates rows; do
    j=$(ember_json bench -m "$m" --requests 64 --rate inf --prompt-len 16:16 --gen-len "$TG_BATCH:$TG_BATCH" \
        --max-seqs 64 --seed 1 --temp 1 --top-k 40 --sample-from "$from")
    cells+=("$(fmt "$(jnum throughput_tok_s "$j")") tok/s (TPOT p50 $(fmt "$(jnum tpot_ms "$j" p50)") ms)")
  done
  SAMPLED_RESULT[$name]="candidates ${cells[0]}; whole rows ${cells[1]}"
  log "$name: sampled decode, 64 streams: ${SAMPLED_RESULT[$name]}"
}

# The linear kernel at each tile shape (lanes a tile x lane groups per workgroup x rows
# per tile), for Q8_0 and Q4_K at an 8B model's decode and prompt shapes: what the
# device's defaults should be (test_kernels bench; ember_kernels_opts.linear_lanes/
# .linear_groups/.linear_rows; the lanes' default is engine/gpu/device_table.c's).
bench_shapes() {
  local tk=$BUILD/ember/tests/test_kernels out=$BUILD/shapes.txt shapes=4096x4096x1,14336x4096x1,4096x4096x512
  [ "$SMALL" = 1 ] && shapes=1024x1024x1,1024x1024x64
  [ -x "$tk" ] || { log "shapes: no $tk (tests not built)"; return 0; }
  if EMBER_VALIDATION=0 EMBER_BENCH_TYPES=q8_0,q4_k EMBER_BENCH_SHAPES=$shapes EMBER_BENCH_GROUPS=1,2,4,8 \
       EMBER_BENCH_ROWS=8,16 EMBER_BENCH_LANES=8,16,32,64 "$tk" bench >"$out" 2>&1; then
    SHAPES_DONE=1; log "shapes: $(grep -c ' n_tok ' "$out") cases ($out)"
  else
    log "FAILED: test_kernels bench ($out)"
  fi
  # Q8_0 and Q4_K by integer dot products (ember_kernels_opts.int_dot), at the device's tile shapes
  EMBER_VALIDATION=0 EMBER_BENCH_TYPES=q8_0,q4_k EMBER_BENCH_SHAPES=$shapes EMBER_BENCH_IDOT=1 \
    "$tk" bench >>"$out" 2>&1 || log "FAILED: test_kernels bench with EMBER_BENCH_IDOT=1 ($out)"
  # F16 and Q8_0 units in fp16 arithmetic (ember_kernels_opts.fp16_dot)
  EMBER_VALIDATION=0 EMBER_BENCH_TYPES=f16,q8_0 EMBER_BENCH_SHAPES=$shapes EMBER_BENCH_FP16=1 \
    "$tk" bench >>"$out" 2>&1 || log "FAILED: test_kernels bench with EMBER_BENCH_FP16=1 ($out)"
  # the matrix family: KHR's and NV's cooperative matrices where the card has them, and by FMA
  for mm in khr nv fma; do
    EMBER_VALIDATION=0 EMBER_BENCH_TYPES=q8_0,q4_k EMBER_BENCH_SHAPES=$shapes EMBER_BENCH_MATRIX=$mm \
      "$tk" bench >>"$out" 2>&1 || log "FAILED: test_kernels bench with EMBER_BENCH_MATRIX=$mm ($out)"
  done
  # x staged in shared memory for the workgroup's tiles, or not (ember_kernels_opts.
  # linear_stage: the same bits), at the device's lanes and 2-8 tiles a workgroup
  local pre=4096x4096x512,14336x4096x64
  [ "$SMALL" = 1 ] && pre=1024x1024x64
  EMBER_VALIDATION=0 EMBER_BENCH_TYPES=q8_0,q4_k EMBER_BENCH_SHAPES=$pre EMBER_BENCH_GROUPS=2,4,8 \
    EMBER_BENCH_STAGE=1,2 "$tk" bench >>"$out" 2>&1 || log "FAILED: test_kernels bench with EMBER_BENCH_STAGE ($out)"
}

# The kernel variants a whole model can be forced to (ember --kernels, docs/cli.md) beside
# the device's own choices: prompt PP tokens in one step, then TG decoded; one run each.
bench_variants() { # NAME FILE
  local name=$1 m=$2 spec j prompt cells=() k
  prompt=$(make_prompt "$m" "$PP")
  for spec in default matrix=on matrix=on,coop=nv matrix=on,coop=off stage=on int-dot=on fp16-dot=on norm-fusion=off \
              attn-split=off lanes=16 lanes=64; do
    k=(); [ "$spec" = default ] || k=(--kernels "$spec")
    j=$(ember_json generate -m "$m" -p "$prompt" -n "$TG" --ignore-eos --max-batch-tokens "$PP" "${k[@]}")
    cells+=("$spec $(fmt "$(jnum prefill_tok_s "$j")") / $(fmt "$(jnum decode_tok_s "$j")")")
  done
  VARIANTS_RESULT=$(printf '%s; ' "${cells[@]}"); VARIANTS_RESULT=${VARIANTS_RESULT%; }
  log "$name: kernel variants, prompt / decode tok/s: $VARIANTS_RESULT"
}

# The fixed costs of a decode step: ms a token on stories260K's shape (5 layers, dim 64).
bench_overhead() {
  local m=$MODELS_DIR/T-f32.gguf tg=() j
  for _ in $(seq "$RUNS"); do
    j=$(ember_json generate -m "$m" -p the -n 256 --ignore-eos)
    [ -n "$j" ] && tg+=("$(jnum decode_tok_s "$j")")
  done
  local t; t=$(median "${tg[@]}")
  OVERHEAD_CELL=$(awk -v t="$t" 'BEGIN { if (t > 0) printf "%.3f ms a token (%.0f tok/s)", 1000 / t, t; else print "-" }')
  log "per-token time, stories260K shape: $OVERHEAD_CELL"
}

# Speculative decoding: the Q8_0 copy of the F32 target as draft, k = 4, against plain
# decoding of the target, interleaved; greedy, so both must give the same tokens.
bench_speculative() {
  local t=$MODELS_DIR/A-f32.gguf d=$MODELS_DIR/A-f32-draft-q8_0.gguf plain=() spec=() a b acc="" tps="" same=yes
  for _ in $(seq "$RUNS"); do
    a=$(ember_json generate -m "$t" -p "the" -n "$TG" --ignore-eos)
    b=$(ember_json generate -m "$t" -p "the" -n "$TG" --ignore-eos --draft "$d" --draft-k 4)
    [ -n "$a" ] && [ -n "$b" ] || { same="?"; continue; }
    [ "$(grep -o '"tokens": \[[^]]*\]' <<<"$a")" = "$(grep -o '"tokens": \[[^]]*\]' <<<"$b")" ] || same=NO
    plain+=("$(jnum decode_tok_s "$a")"); spec+=("$(jnum decode_tok_s "$b")")
    acc=$(jnum acceptance_rate "$b"); tps=$(jnum tokens_per_step "$b")
  done
  local p s; p=$(median "${plain[@]}"); s=$(median "${spec[@]}")
  local up; up=$(awk -v a="$s" -v b="$p" 'BEGIN { if (a != "" && b > 0) printf "%.2fx", a / b; else print "-" }')
  SPEC_CELL="**$up**: $(fmt "$s") vs $(fmt "$p") tok/s plain; acceptance $(fmt "$acc"), $(fmt "$tps") tokens/step"
  SPEC_NOTE="greedy, $TG tokens, median of $RUNS; same tokens as plain: $same"
  log "speculative: $SPEC_CELL ($SPEC_NOTE)"
}

# First and second start: wall time of `ember generate -n 1` twice, with XDG_CACHE_HOME
# a fresh directory (empty driver and pipeline caches) for the first.
bench_start() {
  local m=$MODELS_DIR/B-q8_0.gguf cache t0 t1 t2 size
  cache=$(mktemp -d /tmp/gpu-check-cache.XXXXXX)
  t0=$(now_ms)
  env -u __GL_SHADER_DISK_CACHE_PATH XDG_CACHE_HOME="$cache" EMBER_VALIDATION=0 "$EMBER" generate -m "$m" -p the -n 1 \
    >/dev/null 2>>"$RAW_LOG.stderr" || log "FAILED: first start"
  t1=$(now_ms)
  env -u __GL_SHADER_DISK_CACHE_PATH XDG_CACHE_HOME="$cache" EMBER_VALIDATION=0 "$EMBER" generate -m "$m" -p the -n 1 \
    >/dev/null 2>>"$RAW_LOG.stderr" || log "FAILED: second start"
  t2=$(now_ms)
  size=$(du -sh "$cache" | cut -f1)
  START_CELL="first $(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.2f", (a - b) / 1000}') s, second $(awk -v a="$t2" -v b="$t1" 'BEGIN {printf "%.2f", (a - b) / 1000}') s"
  START_NOTE="wall time of \`ember generate -n 1\`, model B Q8_0; XDG_CACHE_HOME a fresh directory ($size after)"
  log "start: $START_CELL ($START_NOTE)"
  rm -rf "$cache"
}

# llama.cpp (from --prepare) on the same GGUF files: llama-bench -p PP -n TG -ngl 99.
setup_llama() {
  LLAMA=""
  LLAMA_NOTE=""
  if [ "$NO_LLAMA" = 1 ]; then LLAMA_NOTE="not run (--no-llama)"; return 0; fi
  local deps=$1
  if [ -z "$deps" ] || [ ! -f "$deps/llama-cpp.tar.xz" ]; then
    LLAMA_NOTE="not run: no llama-cpp.tar.xz in --deps"
    [ -n "$deps" ] && [ -f "$deps/llama-cpp.txt" ] && LLAMA_NOTE="not run: $(cat "$deps/llama-cpp.txt")"
    return 0
  fi
  command -v xz >/dev/null || { LLAMA_NOTE="not run: xz is missing"; return 0; }
  rm -rf "$BUILD/llama-cpp" && mkdir -p "$BUILD"
  xz -dc "$deps/llama-cpp.tar.xz" | tar -x -C "$BUILD" || { LLAMA_NOTE="not run: unpacking failed"; return 0; }
  LLAMA=$BUILD/llama-cpp/llama-bench
  LLAMA_VERSION=$(cat "$BUILD/llama-cpp/VERSION")
  log "llama.cpp: $LLAMA_VERSION"
}
bench_llama() { # NAME FILE
  [ -n "$LLAMA" ] || return 0
  local name=$1 m=$2 out err
  err=$BUILD/llama-bench-$name.stderr
  # lavapipe is a CPU device, which llama.cpp's Vulkan backend skips unless named.
  out=$(env ${SMALL_VK:+GGML_VK_VISIBLE_DEVICES=0} timeout 120 "$LLAMA" -m "$m" -p "$PP" -n "$TG" -r "$RUNS" -ngl 99 \
        -o jsonl 2>"$err") || log "llama-bench failed on $name ($err)"
  printf '%s\n' "\$ llama-bench -m $m -p $PP -n $TG -r $RUNS -ngl 99 -o jsonl" "$out" >>"$RAW_LOG"
  local dev; dev=$(grep -m1 -o 'ggml_vulkan: 0 = [^|(]*' "$err" | sed 's/ggml_vulkan: 0 = //; s/ *$//' || true)
  if [ -z "$dev" ]; then
    LLAMA_NOTE="llama.cpp found no Vulkan device (ran on its CPU backend: not shown)"
    return 0
  fi
  LLAMA_DEVICE=$dev
  LLAMA_BUILD=$(grep -m1 -o '"build_commit": "[^"]*"' <<<"$out" | cut -d'"' -f4 || true)
  LLAMA_PP[$name]=$(jnum avg_ts "$(grep -F "\"n_prompt\": $PP, \"n_gen\": 0," <<<"$out" || true)")
  LLAMA_TG[$name]=$(jnum avg_ts "$(grep -F "\"n_prompt\": 0, \"n_gen\": $TG," <<<"$out" || true)")
  log "llama.cpp $name: pp$PP $(fmt "${LLAMA_PP[$name]:-}") tok/s, tg$TG $(fmt "${LLAMA_TG[$name]:-}") tok/s"
}

device_lines() {
  local info drv=""
  info=$(EMBER_VALIDATION=0 "$EMBER" info 2>&1 | grep -E '^device [0-9]+:' || true)
  [ -n "$info" ] || die "ember info lists no Vulkan device: $(EMBER_VALIDATION=0 "$EMBER" info 2>&1 | head -3)"
  if command -v nvidia-smi >/dev/null; then
    drv="NVIDIA driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)"
  elif [ -r /proc/driver/nvidia/version ]; then
    drv=$(head -n1 /proc/driver/nvidia/version)
  elif command -v dpkg-query >/dev/null && dpkg-query -W -f='${Version}' mesa-vulkan-drivers >/dev/null 2>&1; then
    drv="Mesa $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
  fi
  DEVICE_INFO=$info
  DRIVER_INFO=${drv:-driver version unknown}
}

report() {
  local commit='?' rc=0
  if commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); then
    git -C "$ROOT" diff --quiet HEAD 2>/dev/null || rc=$?
    [ "$rc" = 1 ] && commit+=" (with uncommitted changes)"
  fi
  {
    echo "## bench/gpu-check.sh$([ "$SMALL" = 1 ] && echo " --small"), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit"
    echo
    sed 's/^/    /' <<<"$DEVICE_INFO"
    echo "    $DRIVER_INFO; $(nproc) CPU cores; Ember picks the first discrete device (EMBER_DEVICE=N to choose)"
    echo
    echo "Models (\`ember make-test-model\`, random weights, context $CTX): A = $SHAPE_A; B = $SHAPE_B; T = $SHAPE_T." \
         "Ember and llama.cpp read the same files.$([ -n "${LLAMA_VERSION:-}" ] && echo " llama.cpp: $LLAMA_VERSION${LLAMA_BUILD:+ (build $LLAMA_BUILD)}, llama-bench -ngl 99 -r $RUNS${LLAMA_DEVICE:+ on $LLAMA_DEVICE}.")"
    echo
    echo "| check | model | Ember | llama.cpp | notes |"
    echo "| --- | --- | --- | --- | --- |"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Build ${BUILD_S} s; whole run $(elapsed) s. Tests left out: $(printf '%s; ' "${EXCLUDED_TESTS[@]}" | sed 's/|/: /g; s/; $//')."
    [ -n "$LLAMA_NOTE" ] && echo "llama.cpp: $LLAMA_NOTE."
    [ ${#SKIPPED[@]} -gt 0 ] && echo "Not measured (the ${BUDGET} s budget ran out): ${SKIPPED[*]}."
    echo "Raw JSON of every run: $(basename "$RAW_LOG"); test output: $(basename "$TEST_LOG")."
    local p
    for p in "${PROFILED[@]}"; do
      echo
      echo "### ember generate --profile, $p ($PROFILE_TG tokens after \"the\")"
      echo
      sed 's/^/    /' "$BUILD/profile-$p.txt"
    done
    if [ "$SHAPES_DONE" = 1 ]; then
      echo
      echo "### linear tile shapes: test_kernels bench, g = lane groups a workgroup, r = rows a tile"
      echo
      grep ' n_tok ' "$BUILD/shapes.txt" | sed 's/^/    /'
    fi
  } | tee "$OUT_FILE"
}

run() {
  [ "$(uname -m)" = x86_64 ] || log "WARNING: $(uname -m): the carried .debs and llama.cpp are x86-64"
  check_tools
  mkdir -p "$BUILD"
  BUILD=$(cd "$BUILD" && pwd)
  [ -n "$DEPS" ] && { [ -d "$DEPS" ] || die "--deps $DEPS: no such directory"; DEPS=$(cd "$DEPS" && pwd); }
  find_icd
  install_runtime_libs "$DEPS"
  setup_build_deps "$DEPS" "$BUILD/deps-root"
  setup_shaders "$DEPS"
  build
  device_lines
  log "$(head -n1 <<<"$DEVICE_INFO"); $DRIVER_INFO"
  : >"$RAW_LOG"; : >"$RAW_LOG.stderr"

  start_models
  run_tests
  setup_llama "$DEPS"

  declare -gA PP_RESULT TG_RESULT BATCH_RESULT SAMPLED_RESULT LLAMA_PP LLAMA_TG WEIGHT_MB
  SKIPPED=() PROFILED=() SHAPES_DONE=0
  COPY_GBS="" COPY_CELL="-" COPY_NOTE="not measured"
  SPEC_CELL="-" SPEC_NOTE="not measured" VARIANTS_RESULT="" START_CELL="-" START_NOTE="not measured" OVERHEAD_CELL="-"
  # What the issue's targets need first (8B-class decode beside llama.cpp and the copy
  # bandwidth, 16 streams, the fixed costs), the rest while the budget lasts.
  local task name
  for task in copy "pp B-q8_0" "pp B-q4_k_m" "pp A-q8_0" "batch A-q8_0" overhead "batch B-q4_k_m" \
              "sampled B-q4_k_m" shapes "variants A-q8_0" "pp A-q4_k_m" "pp A-f16" "pp B-f16" speculative start; do
    if over_budget; then SKIPPED+=("$task"); continue; fi
    name=${task#* }
    case $task in
      copy) bench_copy ;;
      pp\ *) need_model "$name" || continue
              bench_pp_tg "$name" "$MODELS_DIR/$name.gguf"
              bench_llama "$name" "$MODELS_DIR/$name.gguf"
              [[ $name == *f16 ]] || bench_profile "$name" "$MODELS_DIR/$name.gguf" ;;
      batch\ *) need_model "$name" && bench_batched "$name" "$MODELS_DIR/$name.gguf" ;;
      sampled\ *) need_model "$name" && bench_sampled "$name" "$MODELS_DIR/$name.gguf" ;;
      shapes) bench_shapes ;;
      variants\ *) need_model "$name" && bench_variants "$name" "$MODELS_DIR/$name.gguf" ;;
      overhead) need_model T-f32 && bench_overhead && bench_llama T-f32 "$MODELS_DIR/T-f32.gguf" ;;
      speculative) need_model A-f32 && bench_speculative ;;
      start) need_model B-q8_0 && bench_start ;;
    esac
  done

  local label m t
  row "copy bandwidth" "-" "$COPY_CELL" "-" "$COPY_NOTE"
  for m in B A; do for t in $TYPES; do
    name="$m-$t"; label="$m $(tr a-z A-Z <<<"$t")"
    [ -n "${PP_RESULT[$name]:-}${TG_RESULT[$name]:-}" ] || continue
    row "prompt $PP tokens / decode $TG tokens (tok/s)" "$label" \
        "$(fmt "${PP_RESULT[$name]:-}") / $(fmt "${TG_RESULT[$name]:-}")" \
        "$(fmt "${LLAMA_PP[$name]:-}") / $(fmt "${LLAMA_TG[$name]:-}")" \
        "prompt in one step (--max-batch-tokens $PP), then decode; median of $RUNS; decode at $(roofline "$name") of the copy bandwidth (${WEIGHT_MB[$name]:--} MB a token)"
  done; done
  for name in A-q8_0 B-q4_k_m; do
    [ -n "${BATCH_RESULT[$name]:-}" ] || continue
    row "batched decode, 1 / 16 / 64 sequences (tok/s)" "${name%%-*} $(tr a-z A-Z <<<"${name#*-}")" "${BATCH_RESULT[$name]}" "-" \
        "ember bench --requests N --rate inf --prompt-len 16:16 --gen-len $TG_BATCH:$TG_BATCH --max-seqs 64; one run"
  done
  for name in B-q4_k_m; do
    [ -n "${SAMPLED_RESULT[$name]:-}" ] || continue
    row "sampled decode, 64 sequences, top-k 40" "${name%%-*} $(tr a-z A-Z <<<"${name#*-}")" "${SAMPLED_RESULT[$name]}" "-" \
        "ember bench --requests 64 ... --temp 1 --top-k 40 --sample-from candidates|rows; one run each"
  done
  [ -z "$VARIANTS_RESULT" ] ||
    row "kernel variants, prompt / decode (tok/s)" "A Q8_0" "$VARIANTS_RESULT" "-" \
        "ember generate ... --kernels SPEC (docs/cli.md), prompt $PP tokens in one step then $TG decoded; one run each"
  row "decode time a token, stories260K's shape" "T F32" "$OVERHEAD_CELL" \
      "$(awk -v t="${LLAMA_TG[T-f32]:-}" 'BEGIN { if (t > 0) printf "%.3f ms", 1000 / t; else print "-" }')" \
      "$SHAPE_T: the fixed costs of a step; median of $RUNS"
  row "speculative decoding, Q8_0 draft (the target quantized), k 4" "A F32" "$SPEC_CELL" "-" "$SPEC_NOTE"
  row "first / second start" "B Q8_0" "$START_CELL" "-" "$START_NOTE"
  row "test suite (ctest -L \"$TEST_LABELS\")" "-" "$TESTS_ROW" "-" "-j$(nproc), at most ${TEST_TIME} s in all; output in $(basename "$TEST_LOG")"
  report
}

# ==== arguments ==========================================================================

main() {
  local prepare_dir=""
  DEPS="" SMALL=0 OUT_FILE="" BUILD=$ROOT/build-gpu-check RUNS="" TEST_LABELS="" NO_TESTS=0 NO_LLAMA=0 TEST_TIME="" BUDGET=""
  FORCE_DEPS=${GPU_CHECK_FORCE_DEPS:-0}  # 1: use --deps' headers, pkg-config and SPIR-V even where installed (to check them)
  while [ $# -gt 0 ]; do
    case $1 in
      --prepare) prepare_dir=${2:?--prepare DIR}; shift 2 ;;
      --deps) DEPS=${2:?--deps DIR}; shift 2 ;;
      --small) SMALL=1; shift ;;
      --out) OUT_FILE=${2:?--out FILE}; shift 2 ;;
      --build) BUILD=${2:?--build DIR}; shift 2 ;;
      --runs) RUNS=${2:?--runs N}; shift 2 ;;
      --no-tests) NO_TESTS=1; shift ;;
      --no-llama) NO_LLAMA=1; shift ;;
      --test-time) TEST_TIME=${2:?--test-time S}; shift 2 ;;
      --tests) TEST_LABELS=${2:?--tests LABELS}; shift 2 ;;
      --budget) BUDGET=${2:?--budget S}; shift 2 ;;
      -h|--help) usage ;;
      *) log "unknown argument '$1'"; usage ;;
    esac
  done
  if [ -n "$prepare_dir" ]; then
    prepare "$prepare_dir" "$BUILD"
    return 0
  fi
  if [ "$SMALL" = 1 ]; then
    # lavapipe-sized: a few minutes on 2 cores
    SHAPE_A="--dim 256 --layers 2 --heads 8 --kv-heads 2 --ffn 1024 --vocab 4096"
    SHAPE_B="--dim 512 --layers 2 --heads 8 --kv-heads 2 --ffn 1408 --vocab 4096"
    PP=128 TG=32 TG_BATCH=32 CTX=256 SIZE_TAG=small SMALL_VK=1 PROFILE_TG=16
    # lavapipe runs the gpu and cli labels in 5-10 minutes on 2 cores: only unit by default
    RUNS=${RUNS:-3} TEST_LABELS=${TEST_LABELS:-unit} TEST_TIME=${TEST_TIME:-300} BUDGET=${BUDGET:-900}
  else
    # A: Llama-3.2-1B's shape; B: Llama-3.1-8B's (Q8_0 8.5 GB, Q4_K_M 4.9 GB, F16 16 GB)
    SHAPE_A="--dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --rope-base 500000"
    SHAPE_B="--dim 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 --rope-base 500000"
    PP=512 TG=128 TG_BATCH=128 CTX=1024 SIZE_TAG=full SMALL_VK="" PROFILE_TG=32
    RUNS=${RUNS:-3} TEST_LABELS=${TEST_LABELS:-"unit|gpu|cli"} TEST_TIME=${TEST_TIME:-150} BUDGET=${BUDGET:-480}
  fi
  SHAPE_T="--dim 64 --layers 5 --heads 8 --kv-heads 4 --ffn 172 --vocab 512"  # stories260K's
  TYPES="q8_0 q4_k_m f16"
  OUT_FILE=${OUT_FILE:-$BUILD/gpu-check.md}
  mkdir -p "$(dirname "$OUT_FILE")"
  OUT_FILE=$(cd "$(dirname "$OUT_FILE")" && pwd)/$(basename "$OUT_FILE")
  RAW_LOG=${OUT_FILE%.md}-raw.log
  TEST_LOG=${OUT_FILE%.md}-tests.log
  unset EMBER_VALIDATION
  run
}

# Sourced (to try a function alone), it defines the functions and runs nothing.
[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
