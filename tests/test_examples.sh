#!/usr/bin/env bash
# examples/embed.c, built against libember.so, runs on a test model and streams text.
set -euo pipefail
tmp=${EMBER_TEST_TMP:-/tmp}
model=$tmp/example_model.gguf
"$EMBER_BIN" make-test-model "$model" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 128
out=$("$EMBER_EMBED_EXAMPLE" "$model" "hello there" 2>&1)
echo "$out"
if grep -q "^\[32 tokens, first after [0-9]* ms\]$" <<<"$out"; then
  echo "test_examples: 1 passed, 0 failed"
else
  echo "test_examples: 0 passed, 1 failed"; exit 1
fi
