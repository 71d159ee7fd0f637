#!/usr/bin/env bash
# `--memory discrete` (the discrete-GPU path on any device: device-local memory never
# mapped, weights, KV and activations through staging copies, host memory flushed and
# invalidated) gives the same tokens as the device's own path (the default, or `--memory
# auto` given before it): greedy and sampled, with F32 and Q8_0 weights, with a draft model
# (both loaded in the mode); a bad value is refused. EMBER_VALIDATION=1 (from ctest) makes any validation message fail the command.
set -euo pipefail
tmp=${EMBER_TEST_TMP:-/tmp}
pass=0
fail=0
check() { # name, condition result
  if [ "$2" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $1"; fi
}
tokens() { grep -o '"tokens": \[[^]]*\]' | head -1; }

m32=$tmp/memory_discrete_f32.gguf
m8=$tmp/memory_discrete_q8.gguf
draft=$tmp/memory_discrete_draft.gguf
"$EMBER_BIN" make-test-model "$m32" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 \
  --seed 5 >/dev/null
"$EMBER_BIN" make-test-model "$m8" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 \
  --type q8_0 --seed 6 >/dev/null
"$EMBER_BIN" make-test-model "$draft" --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 64 --vocab 512 --ctx 256 \
  --seed 7 >/dev/null

run_pair() { # name, then the generate arguments
  local name=$1
  shift
  local a b
  a=$("$EMBER_BIN" generate "$@" --json | tokens)
  b=$("$EMBER_BIN" generate "$@" --memory discrete --json | tokens)
  echo "$name: auto     $a"
  echo "$name: discrete $b"
  [ -n "$a" ] && [ "$a" = "$b" ]
  check "$name" $?
}

set +e
run_pair "q8_0 greedy" -m "$m8" -p "once upon a time" -n 24 --ignore-eos --memory auto
run_pair "q8_0 sampled" -m "$m8" -p "once upon a time" -n 24 --ignore-eos --temp 0.9 --top-p 0.95 --seed 3
run_pair "f32 greedy, a draft model" -m "$m32" -p "hello world" -n 24 --ignore-eos --draft "$draft" --draft-k 3
# A bad value is refused with a message.
err=$("$EMBER_BIN" generate -m "$m8" -p "hi" -n 4 --memory shared 2>&1 >/dev/null)
rc=$?
[ $rc -ne 0 ] && grep -q -- "--memory is auto or discrete" <<<"$err"
check "bad --memory value" $?
set -e

echo "test_memory_discrete: $pass passed, $fail failed"
[ "$fail" = 0 ]
