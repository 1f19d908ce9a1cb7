// The official `openai` npm client against the real server: completions and chat, streaming and
// not, n = 2, stop, logprobs, the usage chunk, a bad key and an unknown model; greedy results must
// equal the WebSocket API's for the same request.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { skipReason, startServer, websocketGenerate } from './server.mjs';

const reason = skipReason();
if (reason) console.log(`# SKIP: ${reason}`);
const key = 'sk-pagedserve-test';
const auth = { Authorization: `Bearer ${key}` };
const prompt = 'Once upon a time';
const messages = [{ role: 'user', content: 'Once upon a time' }];

describe('openai sdk against pagedserve', { skip: reason ?? false }, () => {
  let server, client, model;
  before(async () => {
    server = await startServer(['--api-key', key, '--served-model-name', 'stories-alias']);
    client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0, timeout: 30000 });
    model = 'stories-alias';
  });
  after(async () => server?.stop());

  async function collect(stream) {
    const choices = new Map();
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks += 1;
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        const seen = choices.get(c.index) ?? { text: '', finish: null, role: null, logprobs: [] };
        seen.text += c.text ?? c.delta?.content ?? '';
        if (c.delta?.role) seen.role = c.delta.role;
        if (c.finish_reason) seen.finish = c.finish_reason;
        if (c.logprobs?.content) seen.logprobs.push(...c.logprobs.content);
        choices.set(c.index, seen);
      }
    }
    return { choices, usage, chunks };
  }

  test('models lists the served name', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), [model]);
  });

  test('greedy completion equals the WebSocket API, streamed or not', async () => {
    const ws = await websocketGenerate(server.port, { prompt, params: { max_tokens: 24, temperature: 0 } }, auth);
    const whole = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0 });
    assert.equal(whole.object, 'text_completion');
    assert.equal(whole.choices[0].text, ws.text);
    assert.equal(whole.choices[0].finish_reason, ws.done.finish_reason);
    assert.equal(whole.usage.completion_tokens, ws.done.usage.completion_tokens);
    assert.equal(whole.usage.prompt_tokens, ws.done.usage.prompt_tokens);

    const stream = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stream: true,
      stream_options: { include_usage: true } });
    const got = await collect(stream);
    assert.equal(got.choices.get(0).text, ws.text);
    assert.equal(got.choices.get(0).finish, 'length');
    assert.ok(got.chunks > 2, `expected one chunk per token, got ${got.chunks}`);
    assert.deepEqual(got.usage, { prompt_tokens: ws.done.usage.prompt_tokens, completion_tokens: 24, total_tokens:
      ws.done.usage.prompt_tokens + 24 });
  });

  test('greedy chat equals the WebSocket API, streamed or not', async () => {
    const ws = await websocketGenerate(server.port, { messages, params: { max_tokens: 20, temperature: 0 } }, auth);
    const whole = await client.chat.completions.create({ model, messages, max_tokens: 20, temperature: 0 });
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.choices[0].message.role, 'assistant');
    assert.equal(whole.choices[0].message.content, ws.text);
    assert.equal(whole.usage.completion_tokens, ws.done.usage.completion_tokens);

    const stream = await client.chat.completions.create({ model, messages, max_tokens: 20, temperature: 0,
      stream: true });
    const got = await collect(stream);
    assert.equal(got.choices.get(0).role, 'assistant');
    assert.equal(got.choices.get(0).text, ws.text);
    assert.equal(got.choices.get(0).finish, ws.done.finish_reason);
    assert.equal(got.usage, null, 'no usage chunk without stream_options.include_usage');
  });

  test('n = 2 gives two choices by index, streamed or not', async () => {
    const single = await client.completions.create({ model, prompt, max_tokens: 10, temperature: 0 });
    const two = await client.completions.create({ model, prompt, max_tokens: 10, temperature: 0, n: 2 });
    assert.deepEqual(two.choices.map((c) => c.index), [0, 1]);
    for (const c of two.choices) assert.equal(c.text, single.choices[0].text);
    assert.equal(two.usage.completion_tokens, 20);
    assert.equal(two.usage.prompt_tokens, single.usage.prompt_tokens, 'the prompt counts once');

    const stream = await client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0.9,
      seed: 11, n: 2, stream: true, stream_options: { include_usage: true } });
    const got = await collect(stream);
    assert.deepEqual([...got.choices.keys()].sort(), [0, 1]);
    for (const c of got.choices.values()) assert.equal(c.finish, 'length');
    assert.equal(got.usage.completion_tokens, 20);
  });

  test('stop ends the text before the stop string', async () => {
    const free = await client.completions.create({ model, prompt, max_tokens: 40, temperature: 0 });
    const text = free.choices[0].text;
    const stop = ' named';
    assert.ok(text.includes(stop), `the free text should contain '${stop}': ${text}`);
    const stopped = await client.completions.create({ model, prompt, max_tokens: 40, temperature: 0, stop: [stop] });
    assert.equal(stopped.choices[0].text, text.slice(0, text.indexOf(stop)));
    assert.equal(stopped.choices[0].finish_reason, 'stop');
    const ws = await websocketGenerate(server.port, { prompt, params: { max_tokens: 40, temperature: 0, stop: [stop] } },
      auth);
    assert.equal(stopped.choices[0].text, ws.text);
  });

  test('logprobs match the WebSocket API in both endpoints\' shapes', async () => {
    const ws = await websocketGenerate(server.port, { prompt, params: { max_tokens: 6, temperature: 0, logprobs: 2 } },
      auth);
    const legacy = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0, logprobs: 2 });
    const lp = legacy.choices[0].logprobs;
    assert.equal(lp.tokens.length, 6);
    assert.equal(lp.top_logprobs.length, 6);
    assert.equal(lp.text_offset[0], 0);
    lp.token_logprobs.forEach((v, i) => assert.ok(Math.abs(v - ws.logprobs[i].logprob) < 1e-4, `token ${i}`));
    lp.top_logprobs.forEach((top) => assert.equal(Object.keys(top).length <= 2, true));

    const chat = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 0,
      logprobs: true, top_logprobs: 2, stream: true });
    const got = await collect(chat);
    const content = got.choices.get(0).logprobs;
    assert.equal(content.length, 6);
    for (const entry of content) {
      assert.equal(typeof entry.token, 'string');
      assert.ok(Array.isArray(entry.bytes));
      assert.equal(entry.top_logprobs.length, 2);
      assert.ok(entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob);
      assert.ok(entry.logprob <= 0);
    }
  });

  test('a bad key is an AuthenticationError', async () => {
    const bad = new OpenAI({ apiKey: 'sk-wrong', baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0 });
    await assert.rejects(bad.completions.create({ model, prompt, max_tokens: 2 }), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, `got ${e?.constructor?.name}: ${e}`);
      assert.equal(e.status, 401);
      assert.equal(e.code, 'invalid_api_key');
      return true;
    });
  });

  test('an unknown model is a NotFoundError', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages, max_tokens: 2 }), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `got ${e?.constructor?.name}: ${e}`);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      return true;
    });
  });

  test('bad arguments are a BadRequestError naming the argument', async () => {
    await assert.rejects(client.completions.create({ model, prompt, max_tokens: 2, temperature: -1 }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `got ${e?.constructor?.name}: ${e}`);
      assert.equal(e.param, 'temperature');
      return true;
    });
  });
});
