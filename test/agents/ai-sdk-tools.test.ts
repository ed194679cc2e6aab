// Tool calls through the providers on the AI SDK, against a fake server that streams each protocol's own
// tool-call form (docs/guides/tools.md#the-step-loop): the agent's tools go out as the wire names them, the
// model's calls come back with Parley's ids and parsed inputs, and the next step sends the calls and their
// results back, ids joined.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type RemoteProviderKind, remoteProvider } from '../../src/agents/ai-sdk-provider.ts';
import type { ModelMessage, ModelReply, ModelRequest, ModelToolSpec } from '../../src/agents/provider.ts';
import { type FakeModelServer, startFakeModelServer } from '../../support/fake-model-server.ts';

let fake: FakeModelServer;
before(async () => {
  fake = await startFakeModelServer();
});
after(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.queue.length = 0;
});

const kinds: RemoteProviderKind[] = ['openai', 'openai-compatible', 'anthropic'];

const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
  required: ['city'],
};
const tools: ModelToolSpec[] = [
  { name: 'get_weather', description: 'The forecast for a city.', input_schema: weatherSchema },
  { name: 'get_time', description: 'The time in a zone.', input_schema: { type: 'object', properties: {} } },
];
const question: ModelMessage = {
  role: 'user',
  content: [{ type: 'text', text: 'Weather and time in Paris?' }],
};

function request(messages: ModelMessage[], withTools = true): ModelRequest {
  return {
    model: 'fake-model',
    system: 'Be brief.',
    messages,
    ...(withTools ? { tools } : {}),
    onDelta: () => {},
    signal: AbortSignal.timeout(20_000),
  };
}

async function provider(kind: RemoteProviderKind) {
  return remoteProvider(kind, { baseUrl: fake.baseUrl, apiKey: 'test-key', settings: { maxTokens: 64 } });
}

/** A field of a recorded body that must be an array of objects. */
function records(value: unknown): Record<string, unknown>[] {
  assert.ok(Array.isArray(value), `an array: ${JSON.stringify(value)}`);
  return value.map((item: unknown) => {
    assert.ok(typeof item === 'object' && item !== null && !Array.isArray(item), JSON.stringify(item));
    return { ...item };
  });
}

/** A step in which the model makes two parallel calls and says nothing. */
async function twoCalls(kind: RemoteProviderKind): Promise<ModelReply> {
  fake.queue.push({
    kind: 'tools',
    calls: [
      { name: 'get_weather', input: { city: 'Paris', days: 2 } },
      { name: 'get_time', input: {} },
    ],
  });
  return (await provider(kind)).generate(request([question]));
}

for (const kind of kinds) {
  describe(`tool calls through the ${kind} provider`, () => {
    test("offers the agent's tools with their JSON Schema as the protocol names them", async () => {
      await (await provider(kind)).generate(request([question]));
      const sent = records(fake.requests[0]?.body.tools);
      assert.equal(sent.length, 2);
      if (kind === 'anthropic') {
        assert.equal(sent[0]?.name, 'get_weather');
        assert.equal(sent[0]?.description, 'The forecast for a city.');
        assert.deepEqual(sent[0]?.input_schema, weatherSchema);
      } else {
        assert.equal(sent[0]?.type, 'function');
        const fn = records([sent[0]?.function])[0];
        assert.equal(fn?.name, 'get_weather');
        assert.equal(fn?.description, 'The forecast for a city.');
        assert.deepEqual(fn?.parameters, weatherSchema);
      }
    });

    test('a request without tools offers none, and its reply has no calls', async () => {
      fake.queue.push({ kind: 'reply', text: 'Sunny.' });
      const reply = await (await provider(kind)).generate(request([question], false));
      assert.equal(fake.requests[0]?.body.tools, undefined);
      assert.equal(reply.text, 'Sunny.');
      assert.deepEqual(reply.tool_calls, []);
    });

    test("gives the model's parallel calls Parley's ids, names and parsed inputs, in order", async () => {
      fake.queue.push({
        kind: 'tools',
        text: 'Let me look.',
        calls: [
          { name: 'get_weather', input: { city: 'Paris', days: 2 } },
          { name: 'get_time', input: {} },
        ],
      });
      const deltas: string[] = [];
      const reply = await (await provider(kind)).generate({
        ...request([question]),
        onDelta: (text) => deltas.push(text),
      });
      assert.equal(reply.text, 'Let me look.');
      assert.equal(deltas.join(''), 'Let me look.');
      assert.equal(reply.stop_reason, 'end');
      assert.deepEqual(reply.usage, {
        input_tokens: 11,
        output_tokens: 7,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
      });
      assert.deepEqual(
        reply.tool_calls.map(({ name, input }) => ({ name, input })),
        [
          { name: 'get_weather', input: { city: 'Paris', days: 2 } },
          { name: 'get_time', input: {} },
        ],
      );
      for (const call of reply.tool_calls) assert.match(call.id, /^call_[0-9A-Za-z]{21}$/);
      assert.notEqual(reply.tool_calls[0]?.id, reply.tool_calls[1]?.id);
    });

    test('a step of calls alone has empty text', async () => {
      const reply = await twoCalls(kind);
      assert.equal(reply.text, '');
      assert.equal(reply.tool_calls.length, 2);
      assert.equal(reply.stop_reason, 'end');
    });

    test("sends the assistant's calls and their results back, an error among them, ids joined", async () => {
      const calls = (await twoCalls(kind)).tool_calls;
      const [weather, time] = calls;
      assert.ok(weather && time);
      const forecast = { city: 'Paris', forecast: ['rain', 'sun'] };
      const down = { error: 'timeout', message: 'The tool did not answer within 15000 ms.' };
      fake.queue.push({ kind: 'reply', text: 'Rain, then sun.' });
      const reply = await (await provider(kind)).generate(
        request([
          question,
          { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }], tool_calls: calls },
          {
            role: 'tool',
            results: [
              { call_id: weather.id, name: 'get_weather', status: 'ok', output: forecast },
              { call_id: time.id, name: 'get_time', status: 'error', output: down },
            ],
          },
        ]),
      );
      assert.equal(reply.text, 'Rain, then sun.');
      assert.deepEqual(reply.tool_calls, []);
      const messages = records(fake.requests[1]?.body.messages);

      if (kind === 'anthropic') {
        assert.deepEqual(
          messages.map((m) => m.role),
          ['user', 'assistant', 'user'],
        );
        const [text, ...uses] = records(messages[1]?.content);
        assert.deepEqual(text, { type: 'text', text: 'Let me look.' });
        assert.deepEqual(uses, [
          { type: 'tool_use', id: weather.id, name: 'get_weather', input: { city: 'Paris', days: 2 } },
          { type: 'tool_use', id: time.id, name: 'get_time', input: {} },
        ]);
        const results = records(messages[2]?.content);
        assert.deepEqual(
          results.map((r) => [r.type, r.tool_use_id, r.is_error]),
          [
            ['tool_result', weather.id, undefined],
            ['tool_result', time.id, true],
          ],
        );
        assert.deepEqual(JSON.parse(String(results[0]?.content)), forecast);
        assert.deepEqual(JSON.parse(String(results[1]?.content)), down);
        return;
      }

      assert.deepEqual(
        messages.map((m) => m.role),
        ['system', 'user', 'assistant', 'tool', 'tool'],
      );
      assert.equal(messages[2]?.content, 'Let me look.');
      const sentCalls = records(messages[2]?.tool_calls);
      assert.deepEqual(
        sentCalls.map((c) => [c.id, c.type]),
        [
          [weather.id, 'function'],
          [time.id, 'function'],
        ],
      );
      const [weatherFn, timeFn] = records(sentCalls.map((c) => c.function));
      assert.equal(weatherFn?.name, 'get_weather');
      assert.deepEqual(JSON.parse(String(weatherFn?.arguments)), { city: 'Paris', days: 2 });
      assert.equal(timeFn?.name, 'get_time');
      assert.deepEqual(JSON.parse(String(timeFn?.arguments)), {});
      assert.equal(messages[3]?.tool_call_id, weather.id);
      assert.deepEqual(JSON.parse(String(messages[3]?.content)), forecast);
      assert.equal(messages[4]?.tool_call_id, time.id);
      // OpenAI's SDK marks an error result by wrapping it; the compatible one sends it as it is.
      assert.deepEqual(JSON.parse(String(messages[4]?.content)), kind === 'openai' ? { error: down } : down);
    });
  });
}
