#!/usr/bin/env bash
# Installs every Debian package Ember needs to build, test and run.
# Idempotent: quiet when everything is present; runs `apt-get update` only when
# something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  glslc glslang-tools spirv-tools
  libpcre2-dev curl python3
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
