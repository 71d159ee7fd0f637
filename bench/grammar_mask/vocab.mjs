// vocab.mjs — writes a real vocabulary as the token bytes mask_bench.c reads: per token a
// little-endian u32 length, a u8 end-of-generation flag, then the bytes (control tokens:
// length 0). Llama 2's 32k SentencePiece vocabulary (npm llama-tokenizer-js) or Llama 3's
// 128k byte-level BPE vocabulary (npm llama3-tokenizer-js).
//   node vocab.mjs llama2|llama3 OUT
import { createRequire } from "module";
import { writeFileSync } from "fs";

const require = createRequire(process.cwd() + "/");
const [which, out] = process.argv.slice(2);

// GPT-2's byte <-> printable character table (the inverse of bytes_to_unicode)
function gpt2Bytes() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const map = new Map();
  bs.forEach((b, i) => map.set(String.fromCodePoint(cs[i]), b));
  return map;
}

let tokens = []; // [bytes (Uint8Array), eog]
if (which === "llama2") {
  const t = require("llama-tokenizer-js").default;
  tokens = t.vocabById.map((p, id) => {
    if (id < 3) return [new Uint8Array(0), id === 2];
    const m = /^<0x([0-9A-F]{2})>$/.exec(p);
    if (m) return [Uint8Array.of(parseInt(m[1], 16)), false];
    return [new TextEncoder().encode(p.replaceAll("\u2581", " ")), false];
  });
} else if (which === "llama3") {
  const t = require("llama3-tokenizer-js/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs").llama3Tokenizer;
  const map = gpt2Bytes();
  tokens = t.vocabById.map((p, id) => {
    if (id >= 128000) return [new Uint8Array(0), id === 128001 || id === 128008 || id === 128009];
    return [Uint8Array.from([...p].map((c) => map.get(c))), false];
  });
} else {
  console.error("usage: node vocab.mjs llama2|llama3 OUT");
  process.exit(2);
}
const parts = [];
for (const [bytes, eog] of tokens) {
  const h = Buffer.alloc(5);
  h.writeUInt32LE(bytes.length, 0);
  h.writeUInt8(eog ? 1 : 0, 4);
  parts.push(h, Buffer.from(bytes));
}
writeFileSync(out, Buffer.concat(parts));
console.log(`${which}: ${tokens.length} tokens -> ${out}`);
