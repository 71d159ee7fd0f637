# llama_cpp.sh — sourced (not run) by bench/quant-vs-llama.sh, bench/logprobs-vs-llama.sh
# and bench/speed-vs-llama.sh: llama.cpp's prebuilt libraries and headers, and how to build
# a C program against them.
#   llama_cpp_fetch TMP [vulkan]
# sets version (npm node-llama-cpp's), llama (the folder: LLAMA_CPP_DIR, else fetched with
# npm into TMP/llama), cpulib (the CPU build's libraries), with vulkan also vk and vklib
# (the Vulkan build's; from LLAMA_CPP_DIR/vulkan when it has them, else fetched into
# TMP/vulkan), inc (the compiler's -I flags for llama.h and ggml's headers) and
# llama_version (llama.cpp's commit and its date).
# What is fetched: npm @node-llama-cpp/linux-x64 (the CPU build: libllama, libggml and a
# CPU backend per x86-64 level), node-llama-cpp (whose git bundle holds llama.cpp's source
# at that release: the headers) and, for vulkan, @node-llama-cpp/linux-x64-vulkan. The
# layout of LLAMA_CPP_DIR is the same: src/, bins/package/bins/linux-x64/ and
# vulkan/package/bins/linux-x64-vulkan/.
#   llama_cpp_cc cpu|vulkan OUT SRC.c [more cc arguments]
# compiles SRC.c against that build's libllama (-O1, rpath set to its folder).
version=3.21.1

llama_cpp_fetch() {
  local tmp=$1
  llama=${LLAMA_CPP_DIR:-}
  if [ -z "$llama" ]; then
    llama=$tmp/llama
    mkdir "$llama"
    echo "llama.cpp from npm node-llama-cpp@$version ..."
    (cd "$llama" && npm pack --silent "@node-llama-cpp/linux-x64@$version" "node-llama-cpp@$version" >/dev/null &&
      mkdir bins main && tar xzf "node-llama-cpp-linux-x64-$version.tgz" -C bins &&
      tar xzf "node-llama-cpp-$version.tgz" -C main && git clone -q main/package/llama/gitRelease.bundle src 2>/dev/null)
  fi
  cpulib=$llama/bins/package/bins/linux-x64
  inc=(-I"$llama/src/include" -I"$llama/src/ggml/include")
  llama_version=$(git -C "$llama/src" log -1 --format='%h %cd' --date=short)
  [ "${2:-}" = vulkan ] || return 0
  vk=$llama/vulkan
  if [ ! -d "$vk/package/bins/linux-x64-vulkan" ]; then
    vk=$tmp/vulkan
    mkdir -p "$vk"
    echo "llama.cpp's Vulkan build from npm @node-llama-cpp/linux-x64-vulkan@$version ..."
    (cd "$vk" && npm pack --silent "@node-llama-cpp/linux-x64-vulkan@$version" >/dev/null &&
      tar xzf "node-llama-cpp-linux-x64-vulkan-$version.tgz")
  fi
  vklib=$vk/package/bins/linux-x64-vulkan
}

llama_cpp_cc() {
  local build=$1 out=$2 src=$3
  shift 3
  if [ "$build" = vulkan ]; then
    cc -O1 -o "$out" "$src" "${inc[@]}" -L"$vklib" -l:libllama.vulkan.v0.4.0.so -l:libggml.vulkan.v0.4.0.so \
      -l:libggml-base.so -Wl,-rpath,"$vklib" "$@"
  else
    cc -O1 -o "$out" "$src" "${inc[@]}" -L"$cpulib" -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so \
      -l:libggml-base.so -Wl,-rpath,"$cpulib" "$@"
  fi
}
