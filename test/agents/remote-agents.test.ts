// Agents on real wire protocols, end to end through the app, against a fake model server
// (docs/guides/agents.md#providers): an anthropic agent answers and streams; a model that refuses images
// leaves the session usable; upstream failures reach the client as codes it can act on, plain and streamed.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type FakeModelServer, startFakeModelServer } from '../../support/fake-model-server.ts';
import type { TestApp } from '../helpers/app.ts';
import { tinyPng } from '../helpers/multipart.ts';
import { buildSessionApp, createSession, send, upload } from '../helpers/sessions.ts';
import { parseSse, type SseEvent } from '../helpers/sse.ts';

let fake: FakeModelServer;
let t: TestApp;

/** A streamed send's events, read whole. */
async function streamed(sessionId: string, body: unknown): Promise<SseEvent[]> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/v1/agents/sessions/${sessionId}/messages/stream`,
    headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json', accept: 'text/event-stream' },
    payload: JSON.stringify(body),
  });
  assert.equal(res.statusCode, 200, res.body);
  return parseSse(res.body).events;
}
before(async () => {
  fake = await startFakeModelServer();
  const agent = (id: string, provider: string) => ({
    id,
    provider,
    model: 'fake-model',
    base_url: fake.baseUrl,
    api_key_env: 'FAKE_API_KEY',
    timeouts: { total_ms: 10_000, stall_ms: 5_000 },
  });
  t = await buildSessionApp({ FAKE_API_KEY: 'fake-key' }, [
    agent('claude', 'anthropic'),
    agent('local', 'openai-compatible'),
  ]);
});
after(async () => {
  await t.close();
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.queue.length = 0;
});

describe('an anthropic agent', () => {
  test('answers with the reply, its stop reason and usage, over the Messages API', async () => {
    const session = await createSession(t, 'claude');
    fake.queue.push({ kind: 'reply', text: 'Hello from Claude.' });
    const res = await send(t, session.id, { content: 'Hi!' });
    assert.equal(res.statusCode, 201, res.body);
    const message = res.json().agent_message;
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from Claude.' }]);
    assert.equal(message.stop_reason, 'end');
    const { input_tokens, output_tokens, cost_micro_usd } = message.usage;
    assert.deepEqual([input_tokens, output_tokens, cost_micro_usd], [11, 7, 0], 'no pricing: no cost');
    const sent = fake.requests[0];
    assert.equal(sent?.path, '/v1/messages');
    assert.equal(sent?.headers['x-api-key'], 'fake-key');
    assert.deepEqual(sent?.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi!' }] }]);
  });

  test('streams its reply as deltas, then the stored message', async () => {
    const session = await createSession(t, 'claude');
    fake.queue.push({ kind: 'reply', text: 'Streamed from Claude.' });
    const events = await streamed(session.id, { content: 'Hi!' });
    const names = events.map((e) => e.event);
    assert.equal(names[0], 'turn.started');
    assert.deepEqual(names.slice(-2), ['message.completed', 'turn.completed']);
    const text = events
      .flatMap((e) => (e.event === 'message.delta' ? [e.data.delta?.text ?? ''] : []))
      .join('');
    assert.equal(text, 'Streamed from Claude.');
  });
});

describe('a model that refuses images', () => {
  test('is asked again with the files as placeholder lines, so this and later turns of the session get replies', async () => {
    const session = await createSession(t, 'local');
    const image = await upload(t, tinyPng, 'dot.png', 'image/png');
    // llama.cpp's server, word for word: a 500 for an image its model cannot take.
    const refused = {
      kind: 'status' as const,
      status: 500,
      body: {
        error: {
          code: 500,
          message:
            'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
          type: 'server_error',
        },
      },
    };
    fake.queue.push(refused, { kind: 'reply', text: 'I cannot see images, but hello.' });
    const first = await send(t, session.id, {
      content: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image', file_id: image },
      ],
    });
    assert.equal(first.statusCode, 201, first.body);
    const [withImage, withoutImage] = fake.requests.map((r) => JSON.stringify(r.body));
    assert.match(withImage ?? '', /image_url/);
    assert.doesNotMatch(withoutImage ?? '', /image_url/);
    assert.match(withoutImage ?? '', new RegExp(`\\[image ${image} is not sent: this model refused it\\]`));

    fake.queue.push(refused, { kind: 'reply', text: 'Still here.' });
    const second = await send(t, session.id, { content: 'And now?' });
    assert.equal(second.statusCode, 201, second.body);
    assert.equal(second.json().agent_message.content[0].text, 'Still here.');
  });
});

describe('upstream failures', () => {
  test('a refused key is 502 agent_misconfigured, plain and streamed', async () => {
    const session = await createSession(t, 'local');
    const unauthorized = { kind: 'status' as const, status: 401, body: { error: { message: 'bad key' } } };
    fake.queue.push(unauthorized);
    const res = await send(t, session.id, { content: 'Hi!' });
    assert.equal(res.statusCode, 502, res.body);
    assert.equal(res.json().error.code, 'agent_misconfigured');
    assert.equal(res.json().error.context.upstream_status, 401);

    fake.queue.push(unauthorized);
    const events = await streamed(session.id, { content: 'Hi?' });
    const failed = events.at(-1);
    assert.equal(failed?.event, 'turn.failed');
    assert.equal(failed?.data.error?.code, 'agent_misconfigured');
    assert.equal(failed?.data.partial, false);
  });

  const failures = [
    { status: 400, code: 'agent_rejected' },
    { status: 401, code: 'agent_misconfigured' },
    { status: 404, code: 'agent_rejected' },
    { status: 429, code: 'agent_rate_limited' },
    { status: 500, code: 'agent_unavailable' },
  ];
  for (const { status, code } of failures) {
    test(`a ${status} upstream is ${code} for a plain send, and ends a stream with turn.failed ${code}, nothing partial`, async () => {
      const session = await createSession(t, 'local');
      const failing = {
        kind: 'status' as const,
        status,
        body: { error: { message: `upstream ${status}` } },
        headers: { 'retry-after': '0' },
      };
      fake.queue.push(failing, failing, failing);
      const plain = await send(t, session.id, { content: 'Hi!' });
      assert.equal(plain.json().error?.code, code, plain.body);
      assert.equal(plain.json().error.context.upstream_status, status);
      fake.queue.length = 0;
      fake.queue.push(failing, failing, failing);
      const events = await streamed(session.id, { content: 'Hi!' });
      const failed = events.at(-1);
      assert.equal(failed?.event, 'turn.failed');
      assert.equal(failed?.data.error?.code, code);
      assert.equal(failed?.data.error?.context?.upstream_status, status);
      assert.equal(failed?.data.partial, false);
      if (status === 429) assert.equal(failed?.data.error?.retry_after_seconds, 1);
    });
  }

  test('a 429 after the retries is 503 agent_rate_limited with the upstream Retry-After', async () => {
    const session = await createSession(t, 'local');
    const limited = {
      kind: 'status' as const,
      status: 429,
      body: { error: { message: 'slow down' } },
      headers: { 'retry-after': '0' },
    };
    fake.queue.push(limited, limited, limited);
    const res = await send(t, session.id, { content: 'Hi!' });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().error.code, 'agent_rate_limited');
    assert.equal(res.headers['retry-after'], '1');
    assert.equal(fake.requests.length, 3);
  });

  test('an unknown model is 502 agent_rejected with the upstream message', async () => {
    const session = await createSession(t, 'local');
    fake.queue.push({
      kind: 'status',
      status: 404,
      body: { error: { message: 'model fake-model not found' } },
    });
    const res = await send(t, session.id, { content: 'Hi!' });
    assert.equal(res.statusCode, 502, res.body);
    assert.equal(res.json().error.code, 'agent_rejected');
    assert.deepEqual(res.json().error.context, {
      provider: 'openai-compatible',
      upstream_status: 404,
      upstream_message: 'model fake-model not found',
    });
  });
});
