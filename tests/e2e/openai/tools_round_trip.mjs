// The official `openai` npm client and tools: a whole tool round trip (tool_choice forces the call, the
// client sends the tool's answer back, the server renders both through the Qwen3 chat template and
// replies), streaming and not, against a random-weight Qwen3-shaped checkpoint. The
// model folder comes from the C++ end-to-end test that writes it and runs this file
// (tests/e2e/tools_reasoning_test.cpp) in PAGEDSERVE_QWEN3_MODEL; without it this file skips. Not a
// *.test.mjs: e2e.openai_sdk does not run it on its own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { skipReason, startServer } from './server.mjs';

const modelDir = process.env.PAGEDSERVE_QWEN3_MODEL;
const reason = modelDir ? skipReason() : 'PAGEDSERVE_QWEN3_MODEL not set (run by e2e tools_reasoning)';
if (reason) console.log(`# SKIP: ${reason}`);

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

describe('openai sdk tool round trip', { skip: reason ?? false }, () => {
  let server, client, model;
  before(async () => {
    server = await startServer(['--model', modelDir, '--tokenizer', '']);
    client = new OpenAI({ apiKey: 'unused', baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0, timeout: 60000 });
    model = (await client.models.list()).data[0].id;
  });
  after(async () => server?.stop());

  // The conversation after the model asked for the weather: its call and the tool's answer.
  const messages = [
    { role: 'user', content: 'What is the weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city: 'Paris' }) } },
    ] },
    { role: 'tool', tool_call_id: 'call_1', content: '18C and sunny' },
  ];

  test('the tool answer is rendered and replied to, whole and streamed alike', async () => {
    const params = { model, messages, tools, max_tokens: 6, temperature: 0 };
    const whole = await client.chat.completions.create(params);
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.choices[0].message.role, 'assistant');
    assert.ok(['stop', 'length', 'tool_calls'].includes(whole.choices[0].finish_reason));
    const without = await client.chat.completions.create({ model, messages, max_tokens: 1, temperature: 0 });
    assert.ok(whole.usage.prompt_tokens > without.usage.prompt_tokens, 'the tools block is rendered');

    const stream = await client.chat.completions.create({ ...params, stream: true });
    let content = '';
    const calls = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta ?? {};
      content += delta.content ?? '';
      for (const c of delta.tool_calls ?? []) {
        calls[c.index] ??= { id: c.id, name: c.function?.name, arguments: '' };
        calls[c.index].arguments += c.function?.arguments ?? '';
      }
    }
    assert.equal(content, whole.choices[0].message.content ?? '');
    assert.deepEqual(calls.map((c) => c.name), (whole.choices[0].message.tool_calls ?? []).map((c) => c.function.name));
  });

  // The whole round trip: tool_choice forces the random-weight model to call the tool (the constrained
  // decoder), the client runs it and sends the answer back, the model replies.
  for (const stream of [false, true]) {
    test(`a forced call, the tool's answer, the reply (stream ${stream})`, async () => {
      const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
      // A bounded city name: a random-weight model would otherwise write a string to max_tokens.
      const bounded = [{ type: 'function', function: { ...tools[0].function, parameters: {
        type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'],
        additionalProperties: false } } }];
      const forced = { model, messages: ask, tools: bounded, tool_choice: 'required', max_tokens: 120, temperature: 0.7, seed: 3 };
      let call;
      if (!stream) {
        const first = await client.chat.completions.create(forced);
        assert.equal(first.choices[0].finish_reason, 'tool_calls');
        [call] = first.choices[0].message.tool_calls;
      } else {
        const calls = [];
        let finish;
        for await (const chunk of await client.chat.completions.create({ ...forced, stream: true })) {
          finish = chunk.choices[0]?.finish_reason ?? finish;
          for (const c of chunk.choices[0]?.delta?.tool_calls ?? []) {
            calls[c.index] ??= { id: c.id, type: 'function', function: { name: c.function?.name, arguments: '' } };
            calls[c.index].function.arguments += c.function?.arguments ?? '';
          }
        }
        assert.equal(finish, 'tool_calls');
        [call] = calls;
      }
      assert.equal(call.function.name, 'get_weather');
      const args = JSON.parse(call.function.arguments);
      assert.equal(typeof args.city, 'string');
      const reply = await client.chat.completions.create({
        model, tools, max_tokens: 6, temperature: 0,
        messages: [...ask, { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: `18C and sunny in ${args.city}` }],
      });
      assert.equal(reply.choices[0].message.role, 'assistant');
      assert.ok(reply.usage.completion_tokens > 0);
    });
  }

  test('chat_template_kwargs and unknown fields pass through the client', async () => {
    const on = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1,
      chat_template_kwargs: { enable_thinking: true }, cache_prompt: true });
    const off = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1,
      chat_template_kwargs: { enable_thinking: false }, cache_prompt: true });
    assert.equal(off.usage.prompt_tokens, on.usage.prompt_tokens + 4);
  });
});
