// check.mjs — the official OpenAI Node client (the `openai` npm package, v4) against a
// running `ember serve`. Run by tests/test_openai_client.sh:
//
//   NODE_PATH=DIR/node_modules node check.mjs BASE_URL API_KEY MODEL_ID DIM
//
// DIM is the model's hidden size: the length of its embeddings.
// Besides OpenAI's fields it passes vLLM's truncate_prompt_tokens, as an extra body field.
//
// Prints one line per check ("ok   ..." or "FAIL ...") and exits 1 when any failed.
// ESM `import` ignores NODE_PATH, so the package is loaded with a CommonJS require.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const OpenAI = require('openai');

const [baseURL, apiKey, modelId, dimArg] = process.argv.slice(2);
const dim = Number(dimArg);
if (!baseURL || !apiKey || !modelId || !(dim > 0)) {
  console.error('usage: node check.mjs BASE_URL API_KEY MODEL_ID DIM');
  process.exit(2);
}

// maxRetries 0: a failure shows at once, not after the client's backoff.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30_000 });
let failed = 0;

function show(v) {
  const s = JSON.stringify(v);
  return s && s.length > 300 ? s.slice(0, 300) + '...' : s;
}

// One check: fn returns a short description of what it saw, or throws.
async function check(name, fn) {
  try {
    const saw = await fn();
    console.log(`ok   ${name}${saw ? ': ' + saw : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`);
  }
}

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

// fn must throw an instance of cls with the HTTP status (and, given, the error's code or param).
async function expectError(fn, cls, status, { code, param } = {}) {
  try {
    const r = await fn();
    throw new Error(`no error; got ${show(r)}`);
  } catch (e) {
    if (!(e instanceof cls)) throw new Error(`want ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e}`);
    expect(e.status === status, `want status ${status}, got ${e.status}`);
    expect(code === undefined || e.code === code, `want code ${code}, got ${show(e.code)}`);
    expect(param === undefined || e.param === param, `want param ${param}, got ${show(e.param)}`);
    return `${e.constructor.name} ${e.status}: ${e.message}`;
  }
}

const chatMessages = [
  { role: 'system', content: 'You are a storyteller.' },
  { role: 'user', content: 'Tell me a story about a cat.' },
];
const prompt = 'Once upon a time';
const MAX = 16;

await check('models.list() lists the model', async () => {
  const page = await client.models.list();
  const ids = page.data.map((m) => m.id);
  expect(ids.includes(modelId), `want ${modelId} in ${show(ids)}`);
  expect(page.data.every((m) => m.object === 'model'), `object != "model": ${show(page.data)}`);
  return ids.join(', ');
});

let chatText = null;
await check('chat.completions.create', async () => {
  const r = await client.chat.completions.create({ model: modelId, messages: chatMessages, temperature: 0, max_tokens: MAX });
  expect(r.object === 'chat.completion', `object ${show(r.object)}`);
  expect(Array.isArray(r.choices) && r.choices.length === 1, `choices ${show(r.choices)}`);
  const c = r.choices[0];
  expect(c.message && c.message.role === 'assistant', `message ${show(c.message)}`);
  expect(typeof c.message.content === 'string', `content is not a string: ${show(c.message)}`);
  expect(['stop', 'length'].includes(c.finish_reason), `finish_reason ${show(c.finish_reason)}`);
  expect(r.usage && r.usage.completion_tokens > 0 && r.usage.completion_tokens <= MAX, `usage ${show(r.usage)}`);
  expect(r.usage.prompt_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens,
    `usage ${show(r.usage)}`);
  chatText = c.message.content;
  return `${show(c.message.content)}, finish_reason ${c.finish_reason}, usage ${show(r.usage)}`;
});

await check('chat.completions.create stream: true', async () => {
  const stream = await client.chat.completions.create({ model: modelId, messages: chatMessages, temperature: 0,
    max_tokens: MAX, stream: true });
  let text = '', n = 0, last = null, role = null, ids = new Set();
  for await (const chunk of stream) {
    n++;
    ids.add(chunk.id);
    expect(chunk.object === 'chat.completion.chunk', `object ${show(chunk.object)}`);
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.role) role = c.delta.role;
    if (c.delta.content) text += c.delta.content;
    last = c;
  }
  expect(role === 'assistant', `no delta.role "assistant"`);
  expect(ids.size === 1, `chunks carry ${ids.size} ids`);
  expect(last && ['stop', 'length'].includes(last.finish_reason), `last chunk's finish_reason ${show(last)}`);
  expect(chatText !== null, 'no non-streamed content to compare with');
  expect(text === chatText, `streamed ${show(text)} != non-streamed ${show(chatText)}`);
  return `${n} chunks, ${show(text)}, finish_reason ${last.finish_reason}`;
});

await check('chat.completions.create stream_options.include_usage', async () => {
  const stream = await client.chat.completions.create({ model: modelId, messages: chatMessages, temperature: 0,
    max_tokens: MAX, stream: true, stream_options: { include_usage: true } });
  let usage = null, text = '';
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices[0] && chunk.choices[0].delta.content) text += chunk.choices[0].delta.content;
  }
  expect(usage && usage.completion_tokens > 0, `usage ${show(usage)}`);
  expect(text === chatText, `streamed ${show(text)} != non-streamed ${show(chatText)}`);
  return `usage ${show(usage)}`;
});

let completionText = null;
await check('completions.create (legacy)', async () => {
  const r = await client.completions.create({ model: modelId, prompt, temperature: 0, max_tokens: MAX });
  expect(r.object === 'text_completion', `object ${show(r.object)}`);
  const c = r.choices[0];
  expect(c && typeof c.text === 'string', `choices ${show(r.choices)}`);
  expect(['stop', 'length'].includes(c.finish_reason), `finish_reason ${show(c.finish_reason)}`);
  expect(r.usage && r.usage.completion_tokens > 0, `usage ${show(r.usage)}`);
  completionText = c.text;
  return `${show(c.text)}, finish_reason ${c.finish_reason}, usage ${show(r.usage)}`;
});

await check('completions.create (legacy) stream: true', async () => {
  const stream = await client.completions.create({ model: modelId, prompt, temperature: 0, max_tokens: MAX, stream: true });
  let text = '', n = 0, last = null;
  for await (const chunk of stream) {
    n++;
    expect(chunk.object === 'text_completion', `object ${show(chunk.object)}`);
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.text;
    last = c;
  }
  expect(last && ['stop', 'length'].includes(last.finish_reason), `last chunk's finish_reason ${show(last)}`);
  expect(text === completionText, `streamed ${show(text)} != non-streamed ${show(completionText)}`);
  return `${n} chunks, ${show(text)}, finish_reason ${last.finish_reason}`;
});

await check('chat.completions.create logprobs: true, top_logprobs: 3', async () => {
  const r = await client.chat.completions.create({ model: modelId, messages: chatMessages, temperature: 0,
    max_tokens: MAX, logprobs: true, top_logprobs: 3 });
  const c = r.choices[0], content = c.logprobs && c.logprobs.content;
  expect(Array.isArray(content) && content.length === r.usage.completion_tokens, `logprobs ${show(c.logprobs)}`);
  for (const e of content) {
    expect(typeof e.token === 'string' && e.logprob <= 0 && Array.isArray(e.bytes), `entry ${show(e)}`);
    expect(e.top_logprobs.length === 3 && e.top_logprobs[0].logprob >= e.logprob, `top ${show(e.top_logprobs)}`);
  }
  const bytes = Buffer.from(content.flatMap((e) => e.bytes)).toString('utf8');
  expect(bytes === c.message.content, `the tokens' bytes ${show(bytes)} != the reply ${show(c.message.content)}`);
  return `${content.length} tokens, first ${show(content[0])}`;
});

await check('completions.create (legacy) logprobs: 2', async () => {
  const r = await client.completions.create({ model: modelId, prompt, temperature: 0, max_tokens: MAX, logprobs: 2 });
  const lp = r.choices[0].logprobs, n = r.usage.completion_tokens;
  expect(lp && lp.tokens.length === n && lp.token_logprobs.length === n && lp.top_logprobs.length === n &&
    lp.text_offset.length === n, `logprobs ${show(lp)}`);
  expect(lp.top_logprobs.every((top, i) => top[lp.tokens[i]] === lp.token_logprobs[i]),
    `each top list holds the chosen token ${show(lp.top_logprobs)}`);
  return `${n} tokens, ${show(lp.tokens.slice(0, 4))}`;
});

await check('chat.completions.create n: 3 (the prompt once), and streamed by index', async () => {
  const ask = { model: modelId, messages: chatMessages, temperature: 1, seed: 11, max_tokens: MAX, n: 3 };
  const r = await client.chat.completions.create(ask);
  expect(r.choices.length === 3 && r.choices.every((c, i) => c.index === i), `choices ${show(r.choices)}`);
  const one = await client.chat.completions.create({ ...ask, n: 1, max_tokens: 1 });
  expect(r.usage.prompt_tokens === one.usage.prompt_tokens, `usage ${show(r.usage)} vs n = 1 ${show(one.usage)}`);
  const stream = await client.chat.completions.create({ ...ask, stream: true });
  const text = ['', '', ''];
  for await (const chunk of stream) for (const c of chunk.choices) text[c.index] += c.delta.content || '';
  expect(text.every((t, i) => t === r.choices[i].message.content), `streamed ${show(text)}`);
  return `${show(text)}`;
});

await check('completions.create best_of: 3, n: 2', async () => {
  const r = await client.completions.create({ model: modelId, prompt, temperature: 1, seed: 5, max_tokens: MAX,
    n: 2, best_of: 3, logprobs: 0 });
  const sums = r.choices.map((c) => c.logprobs.token_logprobs.reduce((a, b) => a + b, 0));
  expect(r.choices.length === 2 && sums[0] >= sums[1], `choices ${show(r.choices.map((c) => c.text))} ${show(sums)}`);
  return `${show(r.choices.map((c) => c.text))}, summed log-probabilities ${show(sums)}`;
});

// The client asks for base64 unless told otherwise and decodes it into float32 values; with
// encoding_format given it returns the data as the server sent it.
const texts = ['Once upon a time', 'there was a cat'];
const unitNorm = (v) => Math.abs(Math.sqrt(v.reduce((a, x) => a + x * x, 0)) - 1) < 1e-4;

await check('embeddings.create: two vectors of the model\'s size, unit norm; the same as encoding_format float', async () => {
  const r = await client.embeddings.create({ model: modelId, input: texts });
  expect(r.object === 'list' && r.data.length === 2 && r.data.every((d, i) => d.index === i), `data ${show(r.data)}`);
  const vs = r.data.map((d) => Array.from(d.embedding));
  expect(vs.every((v) => v.length === dim && unitNorm(v)), `lengths ${show(vs.map((v) => v.length))}, want ${dim}`);
  expect(r.usage && r.usage.prompt_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens, `usage ${show(r.usage)}`);
  const f = await client.embeddings.create({ model: modelId, input: texts, encoding_format: 'float' });
  // float32 values from the bytes; the JSON numbers carry 9 digits, which round back to them
  const same = f.data.every((d, i) => d.embedding.every((x, k) => Math.fround(x) === vs[i][k]));
  expect(same, `decoded ${show(vs[0].slice(0, 4))} != float ${show(f.data[0].embedding.slice(0, 4))}`);
  return `${vs.length} x ${dim}, first ${show(vs[0].slice(0, 3))}, usage ${show(r.usage)}`;
});

await check("embeddings.create encoding_format: 'base64': the float32 bytes as sent", async () => {
  const r = await client.embeddings.create({ model: modelId, input: texts, encoding_format: 'base64' });
  const f = await client.embeddings.create({ model: modelId, input: texts, encoding_format: 'float' });
  expect(r.data.every((d) => typeof d.embedding === 'string'), `not strings: ${show(r.data)}`);
  const decoded = r.data.map((d) => {
    const b = Buffer.from(d.embedding, 'base64');
    return Array.from({ length: b.length / 4 }, (_, k) => b.readFloatLE(4 * k));
  });
  expect(decoded.every((v, i) => v.length === dim && v.every((x, k) => x === Math.fround(f.data[i].embedding[k]))),
    `decoded ${show(decoded[0].slice(0, 4))} != float ${show(f.data[0].embedding.slice(0, 4))}`);
  return `${r.data[0].embedding.length} base64 characters a vector`;
});

await check('embeddings.create with an empty string: BadRequestError 400 naming input', () =>
  expectError(() => client.embeddings.create({ model: modelId, input: '' }), OpenAI.BadRequestError, 400,
    { param: 'input' }));

await check('a wrong API key: AuthenticationError 401', () => {
  const bad = new OpenAI({ baseURL, apiKey: 'sk-wrong', maxRetries: 0, timeout: 30_000 });
  return expectError(() => bad.chat.completions.create({ model: modelId, messages: chatMessages, max_tokens: 4 }),
    OpenAI.AuthenticationError, 401);
});

await check('any model name is served (as llama.cpp), the reply naming the served one', async () => {
  const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: chatMessages, max_tokens: 4 });
  expect(r.model === modelId, `model ${r.model} != ${modelId}`);
  return r.model;
});

await check('an unknown path: NotFoundError 404', () =>
  expectError(() => client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404));

await check('max_tokens: 0: BadRequestError 400', () =>
  expectError(() => client.completions.create({ model: modelId, prompt, max_tokens: 0 }),
    OpenAI.BadRequestError, 400));

// vLLM's truncate_prompt_tokens is not in the client's types; create() sends params it does
// not know in the body as they are, which is how vLLM's own docs pass it. The prompt is
// longer than any context the test serves (stories260K: 512; the test model: 256).
const longPrompt = 'Once upon a time there was a cat. '.repeat(120);
const longChat = [{ role: 'user', content: longPrompt }];
const KEEP = 40;

await check('a prompt longer than the context: BadRequestError 400 context_length_exceeded', async () => {
  const tooLong = { code: 'context_length_exceeded' };
  const saw = await expectError(() => client.completions.create({ model: modelId, prompt: longPrompt, max_tokens: 4 }),
    OpenAI.BadRequestError, 400, tooLong);
  await expectError(() => client.chat.completions.create({ model: modelId, messages: longChat, max_tokens: 4 }),
    OpenAI.BadRequestError, 400, tooLong);
  return saw;
});

await check(`completions.create truncate_prompt_tokens: ${KEEP}`, async () => {
  const r = await client.completions.create({ model: modelId, prompt: longPrompt, temperature: 0, max_tokens: MAX,
    truncate_prompt_tokens: KEEP });
  expect(r.usage.prompt_tokens === KEEP, `usage ${show(r.usage)}`);
  expect(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= MAX, `usage ${show(r.usage)}`);
  return `usage ${show(r.usage)}`;
});

await check(`chat.completions.create stream: true, truncate_prompt_tokens: ${KEEP}`, async () => {
  const stream = await client.chat.completions.create({ model: modelId, messages: longChat, temperature: 0,
    max_tokens: MAX, stream: true, stream_options: { include_usage: true }, truncate_prompt_tokens: KEEP });
  let usage = null, n = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices[0] && chunk.choices[0].delta.content) n++;
  }
  expect(usage && usage.prompt_tokens === KEEP, `usage ${show(usage)}`);
  expect(usage.completion_tokens > 0 && usage.completion_tokens <= MAX, `usage ${show(usage)}`);
  return `${n} chunks of text, usage ${show(usage)}`;
});

await check('truncate_prompt_tokens: -1 keeps the context less one', async () => {
  const page = await client.models.list();
  const ctx = page.data.find((m) => m.id === modelId).max_model_len;
  const r = await client.completions.create({ model: modelId, prompt: longPrompt, temperature: 0, max_tokens: MAX,
    truncate_prompt_tokens: -1 });
  expect(r.usage.prompt_tokens === ctx - 1 && r.usage.completion_tokens === 1, `context ${ctx}, usage ${show(r.usage)}`);
  expect(r.choices[0].finish_reason === 'length', `finish_reason ${show(r.choices[0].finish_reason)}`);
  return `context ${ctx}, usage ${show(r.usage)}`;
});

await check('truncate_prompt_tokens: 0: BadRequestError 400 naming the field', () =>
  expectError(() => client.completions.create({ model: modelId, prompt, max_tokens: 4, truncate_prompt_tokens: 0 }),
    OpenAI.BadRequestError, 400, { param: 'truncate_prompt_tokens' }));

console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
process.exit(failed ? 1 : 0);
