// check_lost.mjs — the official OpenAI Node client against an `ember serve` whose GPU is
// lost in the middle of a reply (EMBER_FAULTS=submit_lost=N; tests/test_openai_client.sh):
//
//   NODE_PATH=DIR/node_modules node check_lost.mjs BASE_URL API_KEY MODEL_ID
//
// The streamed reply in flight must raise the client's APIError carrying the server's
// error (code device_lost) after some text, as a vLLM stream's error event does; a
// request after it must fail with 503 (InternalServerError). Exits 1 when a check failed.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const OpenAI = require('openai');

const [baseURL, apiKey, modelId] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30_000 });
const req = { model: modelId, prompt: 'Once upon a time', temperature: 0, max_tokens: 64 };
let failed = 0;

async function check(name, fn) {
  try {
    console.log(`ok   ${name}: ${await fn()}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.message ? e.message : e}`);
  }
}

await check('a stream cut by the lost GPU raises APIError device_lost', async () => {
  let text = '';
  try {
    const stream = await client.completions.create({ ...req, stream: true });
    for await (const chunk of stream) if (chunk.choices[0]) text += chunk.choices[0].text;
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw new Error(`want APIError, got ${e && e.constructor.name}: ${e}`);
    if (e.code !== 'device_lost') throw new Error(`want code device_lost, got ${e.code}: ${e.message}`);
    if (!text) throw new Error('the error came before any text: the GPU was lost too early to test a cut stream');
    return `after ${JSON.stringify(text)}: ${e.message}`;
  }
  throw new Error(`the stream ended without an error: ${JSON.stringify(text)}`);
});

await check('then a new request: InternalServerError 503', async () => {
  try {
    await client.completions.create(req);
  } catch (e) {
    if (!(e instanceof OpenAI.InternalServerError) || e.status !== 503)
      throw new Error(`want InternalServerError 503, got ${e && e.constructor.name} ${e && e.status}`);
    return `${e.status} ${e.code}`;
  }
  throw new Error('the request succeeded');
});

console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
process.exit(failed ? 1 : 0);
