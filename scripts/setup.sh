#!/usr/bin/env bash
# Installs every Debian package Ember needs to build, test and run.
# Idempotent: quiet when everything is present; runs `apt-get update` only when
# something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  glslc glslang-tools spirv-tools
  curl python3
  # tests/test_pretokenize.c: the pre-tokenizers checked against PCRE2 (the library needs none)
  libpcre2-dev
  # tests/test_json_schema.py: outputs of --json-schema validated by an independent validator
  python3-jsonschema
  # ember serve (server/): HTTP, JSON; ember bench --url: an HTTP client
  libmicrohttpd-dev libcjson-dev libcurl4-openssl-dev
  # ember-chat (demo/) and examples/game_loop.c, and their tests under a virtual X server
  libsdl2-dev libsdl2-ttf-dev fonts-dejavu-core xvfb xauth xdotool xclip
  # ember-chat's fallback fonts, found by path at run time: CJK (Droid Sans Fallback) and emoji
  fonts-droid-fallback fonts-noto-color-emoji
  # docs/deploy.md's load balancer, tested on loopback
  nginx-light
  # bench/big-model.sh: a command's peak memory (GNU time)
  time
  # scripts/fuzz.sh: clang and its libFuzzer, ASan and UBSan runtimes (libclang_rt.*.a)
  clang libclang-rt-14-dev
  # scripts/test-windows.sh: Ember built for Windows (mingw-w64) and tested under Wine
  gcc-mingw-w64-x86-64-posix mingw-w64-tools wine wine64
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The OpenAI client test installs the `openai` npm package: npm (with Node.js) from Debian,
# unless a Node.js of another origin already brings it.
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
