#!/usr/bin/env bash
# scripts/get-model.sh against a local mirror (no network): a file whose checksum
# matches the published one is installed, kept on a second run, and a corrupted
# download is refused.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${EMBER_TEST_TMP:-/tmp}/getmodel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
repo=bartowski/SmolLM2-135M-Instruct-GGUF
file=SmolLM2-135M-Instruct-Q8_0.gguf
mkdir -p "$tmp/mirror/api/models/$repo/tree" "$tmp/mirror/$repo/resolve/main"
head -c 100000 /dev/urandom > "$tmp/mirror/$repo/resolve/main/$file"
sum=$(sha256sum "$tmp/mirror/$repo/resolve/main/$file" | cut -d' ' -f1)
cat > "$tmp/mirror/api/models/$repo/tree/main" <<JSON
[{"type":"file","oid":"0123456789abcdef0123456789abcdef01234567","size":1500,"path":"README.md"},
 {"type":"file","oid":"89abcdef0123456789abcdef0123456789abcdef","size":100000,
  "lfs":{"oid":"$sum","size":100000,"pointerSize":135},"path":"$file"}]
JSON
export EMBER_HF_BASE="file://$tmp/mirror" EMBER_CACHE="$tmp/cache"
fail=0
out=$(bash "$root/scripts/get-model.sh" smollm2-135m 2>/dev/null) || { echo "FAIL: download"; fail=1; }
[ "$out" = "$tmp/cache/$file" ] && cmp -s "$out" "$tmp/mirror/$repo/resolve/main/$file" ||
  { echo "FAIL: installed file differs ($out)"; fail=1; }
bash "$root/scripts/get-model.sh" smollm2-135m 2>/dev/null | grep -q "already here" ||
  { echo "FAIL: second run did not keep the file"; fail=1; }
# A mirror that serves other bytes than it publishes a checksum for.
rm -f "$tmp/cache/$file"
head -c 100000 /dev/urandom > "$tmp/mirror/$repo/resolve/main/$file"
if bash "$root/scripts/get-model.sh" smollm2-135m 2>"$tmp/err"; then
  echo "FAIL: corrupted download accepted"; fail=1
fi
grep -q "checksum mismatch" "$tmp/err" || { echo "FAIL: no checksum message"; fail=1; }
[ ! -e "$tmp/cache/$file" ] && [ ! -e "$tmp/cache/$file.part" ] || { echo "FAIL: bad file left behind"; fail=1; }
bash "$root/scripts/get-model.sh" no-such-model 2>/dev/null && { echo "FAIL: unknown name accepted"; fail=1; }
if [ $fail = 0 ]; then echo "test_get_model: 1 passed, 0 failed"; else echo "test_get_model: 0 passed, 1 failed"; fi
exit $fail
