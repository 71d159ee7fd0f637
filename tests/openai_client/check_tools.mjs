// check_tools.mjs — the official OpenAI Node client's structured-output and tool-calling
// helpers against `ember serve` (tests/test_openai_client.sh), on a model with random
// weights and room for the tools in its prompt: every shape comes from Ember's grammars.
//
//   NODE_PATH=DIR/node_modules node check_tools.mjs BASE_URL API_KEY MODEL_ID
//
// beta.chat.completions.parse with a strict json_schema response_format gives
// message.parsed that keeps to the schema; with strict function tools and a forced call it
// gives tool_calls whose parsed_arguments keep to their schemas; beta.chat.completions.stream
// with a named tool and parallel_tool_calls false assembles one call from the stream's
// tool_calls delta. Exits 1 when a
// check failed.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const OpenAI = require('openai');

const [baseURL, apiKey, modelId] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
let failed = 0;

async function check(name, fn) {
  try {
    console.log(`ok   ${name}: ${await fn()}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.message ? e.message : e}`);
  }
}

const turn = {
  type: 'object',
  properties: { mood: { enum: ['calm', 'angry'] }, line: { type: 'string', maxLength: 30 } },
  required: ['mood', 'line'],
  additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'get_weather', strict: true, parameters: {
    type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['C', 'F'] } },
    required: ['city', 'unit'], additionalProperties: false } } },
  { type: 'function', function: { name: 'add', strict: true, parameters: {
    type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } },
    required: ['a', 'b'], additionalProperties: false } } },
];
const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];

function validCall(c) {
  const a = c.function.parsed_arguments ?? JSON.parse(c.function.arguments);
  if (c.function.name === 'get_weather')
    return typeof a.city === 'string' && a.city.length <= 12 && ['C', 'F'].includes(a.unit);
  return c.function.name === 'add' && Number.isInteger(a.a) && Number.isInteger(a.b);
}

await check('beta.chat.completions.parse with a json_schema response_format', async () => {
  const r = await client.beta.chat.completions.parse({
    model: modelId, messages, temperature: 1, seed: 5, max_tokens: 200,
    response_format: { type: 'json_schema', json_schema: { name: 'turn', schema: turn, strict: true } },
  });
  const p = r.choices[0].message.parsed;
  if (!p || !['calm', 'angry'].includes(p.mood) || typeof p.line !== 'string' || p.line.length > 30)
    throw new Error(`parsed ${JSON.stringify(p)} from ${r.choices[0].message.content}`);
  return JSON.stringify(p);
});

await check('beta.chat.completions.parse with strict tools and a forced call', async () => {
  const r = await client.beta.chat.completions.parse({
    model: modelId, messages, temperature: 1, seed: 6, max_tokens: 200, tools, tool_choice: 'required',
  });
  const m = r.choices[0].message;
  if (r.choices[0].finish_reason !== 'tool_calls' || !m.tool_calls?.length || !m.tool_calls.every(validCall))
    throw new Error(`${r.choices[0].finish_reason}: ${JSON.stringify(m)}`);
  return m.tool_calls.map((c) => `${c.function.name}(${JSON.stringify(c.function.parsed_arguments)})`).join(', ');
});

await check('chat.completions.stream assembles the calls from tool_calls deltas', async () => {
  const stream = client.beta.chat.completions.stream({
    model: modelId, messages, temperature: 1, seed: 7, max_tokens: 200, tools,
    tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false,
  });
  const r = await stream.finalChatCompletion();
  const m = r.choices[0].message;
  if (m.tool_calls?.length !== 1 || !m.tool_calls.every((c) => c.function.name === 'add' && validCall(c)))
    throw new Error(JSON.stringify(m));
  return m.tool_calls.map((c) => `${c.function.name}(${c.function.arguments})`).join(', ');
});

process.exit(failed ? 1 : 0);
