// The agent's own tool calls as Open Responses output items, read with the official `openai` package: each
// call is a `function_call` item followed by its `function_call_output`, before the reply's message, in the
// plain answer, the stream and the stored response alike; and random request bodies never get a 5xx.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import fc from 'fast-check';
import OpenAI from 'openai';
import { responseObject } from '#schemas';
import { useApp } from '../../helpers/app.ts';
import { assertOpenResponse, assertOpenStreamEvent } from '../../helpers/open-responses-schema.ts';
import { buildSessionApp, testAgents } from '../../helpers/sessions.ts';
import {
  recordDirective,
  startToolReceiver,
  type ToolReceiver,
  toolAgent,
} from '../../helpers/tool-receiver.ts';

let base = '';
let receiver: ToolReceiver;
// Stopped when the file ends (an `after` registered inside `before` would run right after it).
const stops: (() => unknown)[] = [];
const suite = { after: (fn: () => unknown) => void stops.push(fn) };
after(async () => {
  for (const stop of stops) await stop();
});
const t = useApp(async () => {
  receiver = await startToolReceiver(suite);
  const app = await buildSessionApp({ PARLEY_RATE_LIMIT_KEY: '1000000' }, [
    ...testAgents,
    toolAgent(receiver.url),
  ]);
  base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  return app;
});
const openai = () => new OpenAI({ apiKey: t.apiKey, baseURL: `${base}/v1`, maxRetries: 0 });

test("the agent's tool calls are function_call and function_call_output items before its message", async () => {
  const client = openai();
  const response = await client.responses.create({
    model: 'toolbot',
    input: `${recordDirective('alpha')} please`,
  });
  responseObject.parse(response);
  assertOpenResponse(response);
  assert.deepEqual(
    response.output.map((item) => item.type),
    ['function_call', 'function_call_output', 'message'],
  );
  const [call, output] = response.output;
  assert.ok(call?.type === 'function_call' && output?.type === 'function_call_output');
  assert.equal(call.name, 'record');
  assert.deepEqual(JSON.parse(call.arguments), { value: 'alpha' });
  assert.equal(output.call_id, call.call_id);
  assert.deepEqual(JSON.parse(String(output.output)), { recorded: 'alpha' });
  assert.equal(receiver.requests.length, 1);

  const stream = await client.responses.create({
    model: 'toolbot',
    input: recordDirective('beta'),
    stream: true,
  });
  let final: OpenAI.Responses.Response | undefined;
  for await (const event of stream) {
    assertOpenStreamEvent(event);
    if (event.type === 'response.completed') final = event.response;
  }
  assert.ok(final);
  const types = final.output.map((item) => item.type);
  assert.deepEqual(types.slice(-3), ['function_call', 'function_call_output', 'message']);
  const stored = await client.responses.retrieve(final.id);
  assertOpenResponse(stored);
  assert.deepEqual(
    stored.output.filter((item) => item.type !== 'message'),
    final.output.filter((item) => item.type !== 'message'),
  );
});

test('random request bodies are answered 2xx or a 4xx in the OpenAI envelope, never a 5xx', async () => {
  const body = fc.record(
    {
      model: fc.oneof(fc.constant('demo'), fc.string(), fc.integer()),
      input: fc.oneof(
        fc.string(),
        fc.array(fc.record({ role: fc.constantFrom('user', 'assistant', 'x'), content: fc.anything() })),
        fc.anything(),
      ),
      conversation: fc.oneof(fc.string(), fc.record({ id: fc.string() }), fc.anything()),
      previous_response_id: fc.oneof(fc.string(), fc.constant('resp_ses_x.turn_y')),
      store: fc.anything(),
      tools: fc.anything(),
      stream: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  await fc.assert(
    fc.asyncProperty(body, async (json) => {
      const res = await fetch(`${base}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
      const text = await res.text();
      assert.ok(res.status < 500, `${res.status} ${text}`);
      if (res.status >= 400) {
        const { error } = JSON.parse(text);
        assert.equal(typeof error.message, 'string');
        assert.equal(typeof error.type, 'string');
      }
    }),
    { numRuns: 60 },
  );
});
