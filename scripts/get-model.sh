#!/usr/bin/env bash
# Downloads a known small GGUF model into ~/.cache/ember (or $EMBER_CACHE), with a
# progress bar, and checks it against the SHA-256 that Hugging Face publishes for the
# file (the Git LFS object id, read from the repository's file listing).
#   scripts/get-model.sh            list the known models (also -h, --help); exit 0
#   scripts/get-model.sh NAME       download NAME (idempotent: a verified file is kept)
# EMBER_HF_BASE (default https://huggingface.co) points at a mirror; tests use a local one.
set -euo pipefail

CACHE=${EMBER_CACHE:-$HOME/.cache/ember}
BASE=${EMBER_HF_BASE:-https://huggingface.co}

# name | repository | file | what it is
MODELS="
smollm2-135m|bartowski/SmolLM2-135M-Instruct-GGUF|SmolLM2-135M-Instruct-Q8_0.gguf|SmolLM2 135M Instruct, Q8_0 (145 MB, Apache-2.0)
qwen2.5-0.5b|Qwen/Qwen2.5-0.5B-Instruct-GGUF|qwen2.5-0.5b-instruct-q8_0.gguf|Qwen2.5 0.5B Instruct, Q8_0 (676 MB, Apache-2.0)
tinyllama-1.1b|TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF|tinyllama-1.1b-chat-v1.0.Q8_0.gguf|TinyLlama 1.1B Chat v1.0, Q8_0 (1.2 GB, Apache-2.0)
"

list() {
  echo "known models (scripts/get-model.sh NAME):"
  # (an `[ -n ] && printf` as the loop's last command would fail the pipeline, and with
  # it the script under set -e, on the list's empty last line)
  echo "$MODELS" | while IFS='|' read -r name repo file what; do
    [ -z "$name" ] || printf '  %-16s %s\n' "$name" "$what"
  done
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# The published SHA-256 of repo/file: the "oid" of its LFS entry in the file listing.
published_sha256() {
  local repo=$1 file=$2
  curl -fsSL "$BASE/api/models/$repo/tree/main" |
    tr -d '\n' | grep -o "\"lfs\":{[^}]*}[^}]*\"path\":\"$file\"\|\"path\":\"$file\"[^}]*\"lfs\":{[^}]*}" |
    grep -o '"oid":"[0-9a-f]\{64\}"' | head -1 | cut -d'"' -f4
}

case "${1:-}" in
  ""|-h|--help) list; exit 0 ;;
esac
entry=$(echo "$MODELS" | grep "^$1|" || true)
[ -n "$entry" ] || { echo "get-model.sh: unknown model '$1'" >&2; list >&2; exit 2; }
IFS='|' read -r name repo file what <<<"$entry"
command -v curl >/dev/null || { echo "get-model.sh: needs curl (apt-get install curl)" >&2; exit 1; }

mkdir -p "$CACHE"
dest="$CACHE/$file"
want=$(published_sha256 "$repo" "$file" || true)
[ -n "$want" ] || { echo "get-model.sh: cannot read the checksum of $repo/$file from $BASE" >&2; exit 1; }
if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$want" ]; then
  echo "$dest (already here, checksum ok)"
  exit 0
fi
echo "downloading $what" >&2
bar=--progress-bar
[ -t 2 ] || bar=--silent
curl -fL $bar -o "$dest.part" "$BASE/$repo/resolve/main/$file"
got=$(sha256_of "$dest.part")
if [ "$got" != "$want" ]; then
  rm -f "$dest.part"
  echo "get-model.sh: checksum mismatch for $file: got $got, expected $want" >&2
  exit 1
fi
mv "$dest.part" "$dest"
echo "$dest"
