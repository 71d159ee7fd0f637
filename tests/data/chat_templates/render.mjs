// render.mjs — the reference outputs of tests/test_jinja.c: every template here rendered
// with every conversation of fixtures.json by @huggingface/jinja, Hugging Face's own
// JavaScript interpreter of chat templates, written to expected/TEMPLATE.json. See
// README.md for how to run it (the version is pinned there and checked here).
import { readFileSync, writeFileSync, readdirSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const VERSION = "0.5.13";
const here = dirname(fileURLToPath(import.meta.url));
const pkg = process.env.HF_JINJA ?? "/tmp/ember-hf-jinja/node_modules/@huggingface/jinja";
const meta = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
if (meta.version !== VERSION) throw new Error(`@huggingface/jinja ${meta.version} found, ${VERSION} wanted`);
const { Template } = await import(join(pkg, "dist/index.js"));
if (process.env.TZ !== "UTC") throw new Error("run with TZ=UTC (strftime_now uses local time)");

const fx = JSON.parse(readFileSync(join(here, "fixtures.json"), "utf8"));
mkdirSync(join(here, "expected"), { recursive: true });
let total = 0;
for (const file of readdirSync(here).filter((f) => f.endsWith(".jinja")).sort()) {
  const [bos, eos] = fx.tokens[file] ?? ["<s>", "</s>"];
  const source = readFileSync(join(here, file), "utf8");
  const cases = [];
  for (const f of fx.fixtures) {
    const context = { messages: f.messages, add_generation_prompt: f.add_generation_prompt, bos_token: bos,
                      eos_token: eos, __now: fx.now };
    if (f.with_tools) context.tools = fx.tools;
    const entry = { name: f.name, context: JSON.stringify(context) };
    try {
      // strftime_now reads the fixed time (the C interpreter reads __now the same way).
      const t = new Template(source);
      const real = Date.now;
      Date.now = () => fx.now * 1000;
      const RealDate = Date;
      globalThis.Date = class extends RealDate { constructor(...a) { super(...(a.length ? a : [fx.now * 1000])); } };
      try { entry.output = t.render(context); } finally { globalThis.Date = RealDate; Date.now = real; }
      entry.ok = true;
    } catch (e) {
      entry.ok = false;
      entry.error = String(e.message ?? e);
    }
    cases.push(entry);
    total++;
  }
  writeFileSync(join(here, "expected", file.replace(/\.jinja$/, ".json")),
                JSON.stringify({ template: file, jinja: VERSION, cases }, null, 1) + "\n");
  console.log(`${file}: ${cases.filter((c) => c.ok).length} rendered, ${cases.filter((c) => !c.ok).length} raised`);
}
console.log(`${total} template x fixture pairs`);
