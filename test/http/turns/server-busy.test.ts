// A turn the process has no memory for (docs/internals/decisions.md#resident-memory): with one turn holding
// the whole bound at a slow model and no room to wait, a send, a streamed send, a chat send and a run are
// answered 503 server_busy with Retry-After, as JSON before any event, and store nothing: no message, no
// session, no Idempotency-Key record, so the same request is served once there is room.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestApp } from '../../helpers/app.ts';
import { type FakeChatServer, startFakeChatServer } from '../../helpers/fake-chat-server.ts';
import { allMessages, buildSessionApp, client, createSession } from '../../helpers/sessions.ts';
import { waitFor } from '../../helpers/wait.ts';

let model: FakeChatServer;
let t: TestApp;
before(async () => {
  model = await startFakeChatServer({ contextTokens: 100_000, held: true });
  // A turn of a short message reserves about 260 KB: one fits, two do not, and none may wait.
  t = await buildSessionApp(
    {
      PARLEY_MAX_RESIDENT_BYTES: '400000',
      PARLEY_TENANT_RESIDENT_PERCENT: '100',
      PARLEY_ADMISSION_QUEUE: '0',
    },
    [{ id: 'slow-model', provider: 'openai-compatible', base_url: model.baseUrl, model: 'm' }],
  );
});
after(async () => {
  model.open();
  await t?.close();
  await model?.close();
});

/** The answer is 503 server_busy with Retry-After, in the error envelope. */
function assertBusy(res: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  assert.equal(res.statusCode, 503, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.headers['retry-after'], '2');
  assert.equal(JSON.parse(res.body).error.code, 'server_busy');
}

describe('a turn with no memory free for it', () => {
  test('is refused with 503 server_busy, stores nothing, and is served under the same Idempotency-Key once there is room', async () => {
    const api = client(t);
    const busy = await createSession(t, 'slow-model');
    const held = api.post(`/v1/agents/sessions/${busy.id}/messages`, { content: 'Take your time.' });
    await waitFor('the first turn at the model', () => model.waiting === 1);

    const session = await createSession(t, 'slow-model');
    const path = `/v1/agents/sessions/${session.id}/messages`;
    const key = { 'idempotency-key': 'busy-1' };
    assertBusy(await api.post(path, { content: 'Hello?' }, key));
    assertBusy(await api.post(`${path}/stream`, { content: 'Hello?' }, { 'idempotency-key': 'busy-2' }));
    const chat = {
      id: 'chat-1',
      trigger: 'submit-message',
      messages: [{ id: 'busy-3', role: 'user', parts: [{ type: 'text', text: 'Hello?' }] }],
    };
    assertBusy(await api.post(`/v1/agents/sessions/${session.id}/chat`, chat));
    assert.deepEqual(await allMessages(t, session.id), [], 'a refused send stored nothing');

    const sessions = async () => (await api.get('/v1/agents/sessions?limit=100')).json().items.length;
    const before = await sessions();
    assertBusy(await api.post('/v1/agents/slow-model/run', { messages: [{ content: 'Hello?' }] }));
    assert.equal(await sessions(), before, 'a refused run left no session behind');

    model.open();
    assert.equal((await held).statusCode, 201);
    const retried = await api.post(path, { content: 'Hello?' }, key);
    assert.equal(retried.statusCode, 201, retried.body);
    assert.equal(retried.headers['idempotent-replayed'], undefined, 'the key held no record of the refusal');
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => m.role),
      ['user', 'assistant'],
    );
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /^parley_admission_refused_total\{reason="queue_full"\} 4$/m);
    assert.match(metrics, /^parley_admission_reserved_bytes 0$/m, 'every reservation was given back');
  });
});
