// Messages of a session (server-side family): send one and get the agent's reply, the Idempotency-Key rules
// of docs/internals/decisions.md#idempotency-key, and reading messages back — every status each route
// answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tinyPdf, tinyPng } from '../../helpers/multipart.ts';
import {
  allMessages,
  assert422,
  assert422Under,
  assertError,
  client,
  createSession,
  createUser,
  getSession,
  send,
  sleep,
  textOf,
  turn,
  upload,
  useSessionApp,
} from '../../helpers/sessions.ts';

let png: string;
let pdf: string;
const t = useSessionApp({
  setUp: async (app) => {
    png = await upload(app, tinyPng, 'dot.png', 'image/png');
    pdf = await upload(app, tinyPdf, 'doc.pdf', 'application/pdf');
  },
});
const api = client(t);

describe('POST /v1/agents/sessions/{session_id}/messages', () => {
  it("answers 201 with the agent's reply, which sees the user's name and the context but never the metadata", async () => {
    const user = await createUser(t, { name: 'Ada' });
    const s = await createSession(t, 'demo', {
      user: { id: user.id },
      context: { k: 'v' },
      metadata: { secret: 'hidden-meta' },
    });
    const res = await send(t, s.id, { content: 'hi there' });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(Object.keys(res.json()), ['agent_message']);
    const reply = res.json().agent_message;
    assert.match(reply.id, /^msg_/);
    assert.equal(reply.role, 'assistant');
    assert.equal(reply.metadata, null);
    assert.ok(!Number.isNaN(Date.parse(reply.created_at)));
    assert.deepEqual(reply.content, [
      { type: 'text', text: 'Hello Ada! You said: "hi there". Context: k: "v".' },
    ]);
    assert.ok(!textOf(reply).includes('hidden-meta'));
  });

  it('moves messages_count and last_message_at with every turn', async () => {
    const s = await createSession(t);
    const reply = await turn(t, s.id, 'one');
    const after1 = await getSession(t, s.id);
    assert.equal(after1.messages_count, 2);
    assert.equal(after1.last_message_at, reply.created_at);
    await sleep(3);
    const reply2 = await turn(t, s.id, 'two');
    const after2 = await getSession(t, s.id);
    assert.equal(after2.messages_count, 4);
    assert.equal(after2.last_message_at, reply2.created_at);
    assert.ok(after2.last_message_at > after1.last_message_at);
  });

  it('takes content blocks: text, an image and a file, inferring the type of blocks without one', async () => {
    const s = await createSession(t);
    const res = await send(t, s.id, {
      content: [
        { type: 'text', text: 'look at' },
        { type: 'image', file_id: png },
        { type: 'file', file_id: pdf },
        { text: 'these' },
        { file_id: png },
      ],
      metadata: { source: 'web', n: 1 },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(textOf(res.json().agent_message), 'Hello! You said: "look at these". Attachments: 3.');
    const [user, assistant] = await allMessages(t, s.id);
    assert.equal(user?.role, 'user');
    assert.deepEqual(user?.content, [
      { type: 'text', text: 'look at' },
      { type: 'image', file_id: png },
      { type: 'file', file_id: pdf },
      { type: 'text', text: 'these' },
      { type: 'file', file_id: png },
    ]);
    assert.deepEqual(user?.metadata, { source: 'web', n: 1 });
    const read = await api.get(`/v1/agents/sessions/${s.id}/messages/${user?.id}`);
    assert.deepEqual(read.json().metadata, { source: 'web', n: 1 });
    assert.equal(assistant?.id, res.json().agent_message.id);
  });

  it('stores a role assistant message without calling the model and answers with it', async () => {
    const s = await createSession(t);
    const res = await send(t, s.id, {
      role: 'assistant',
      content: 'A human agent here. [[fail]]',
      metadata: { by: 'op' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const message = res.json().agent_message;
    assert.equal(message.role, 'assistant');
    assert.equal(textOf(message), 'A human agent here. [[fail]]');
    assert.deepEqual(message.metadata, { by: 'op' });
    const stored = await allMessages(t, s.id);
    assert.deepEqual(stored, [message]);
    assert.equal((await getSession(t, s.id)).messages_count, 1);
  });

  it('answers 404 file_not_found naming the field for an unknown file_id, and stores nothing', async () => {
    const s = await createSession(t);
    const res = await send(t, s.id, { content: [{ text: 'see' }, { type: 'image', file_id: 'fil_nope' }] });
    const error = assertError(res, 404, 'file_not_found');
    assert.equal(error.context?.file_id, 'fil_nope');
    assert.match(String(error.context?.param), /content\.1\.file_id$/);
    const other = client(t, await t.createKey('t-files'));
    const foreign = await createSession(t, 'demo', {}, await t.createKey('t-files'));
    assertError(
      await other.post(`/v1/agents/sessions/${foreign.id}/messages`, { content: [{ file_id: png }] }),
      404,
      'file_not_found',
    );
    assert.deepEqual(await allMessages(t, s.id), []);
  });

  it('answers 422 at ["body","content",i,"file_id"] when an image block points at a PDF', async () => {
    const s = await createSession(t);
    const res = await send(t, s.id, { content: [{ text: 'x' }, { type: 'image', file_id: pdf }] });
    assert422(res, ['body', 'content', 1, 'file_id']);
    assert.deepEqual(await allMessages(t, s.id), []);
  });

  it('answers 422 for empty text, text over 32,000 characters, more than 16 blocks, a bad role or no content', async () => {
    const s = await createSession(t);
    assert422Under(await send(t, s.id, { content: '' }), ['body', 'content']);
    assert422Under(await send(t, s.id, { content: [{ type: 'text', text: '' }] }), ['body', 'content']);
    assert422Under(await send(t, s.id, { content: 'x'.repeat(32_001) }), ['body', 'content']);
    assert422Under(await send(t, s.id, { content: [{ text: 'x'.repeat(32_001) }] }), ['body', 'content']);
    assert422Under(await send(t, s.id, { content: Array.from({ length: 17 }, () => ({ text: 'a' })) }), [
      'body',
      'content',
    ]);
    assert422Under(await send(t, s.id, { content: [] }), ['body', 'content']);
    assert422Under(await send(t, s.id, { content: [{ type: 'image' }] }), ['body', 'content', 0]);
    assert422(await send(t, s.id, { content: 'hi', role: 'system' }), ['body', 'role']);
    assert422(await send(t, s.id, { role: 'user' }), ['body', 'content']);
    assert422(await send(t, s.id, { content: 'hi', extra: 1 }), ['body', 'extra'], 'extra_forbidden');
    assert.equal((await send(t, s.id, { content: 'x'.repeat(32_000) })).statusCode, 201);
    const sixteen = await send(t, s.id, { content: Array.from({ length: 16 }, () => ({ text: 'a' })) });
    assert.equal(sixteen.statusCode, 201);
    assert.equal((await getSession(t, s.id)).messages_count, 4);
  });

  it('reports a missing content with the 422 type missing, as every other missing field', {}, async () => {
    const s = await createSession(t);
    assert422(await send(t, s.id, { role: 'user' }), ['body', 'content'], 'missing');
  });

  it('answers 409 session_closed after terminate', async () => {
    const s = await createSession(t);
    await turn(t, s.id, 'before');
    assert.equal((await api.post(`/v1/agents/sessions/${s.id}/terminate`, {})).statusCode, 200);
    assertError(await send(t, s.id, { content: 'after' }), 409, 'session_closed');
    assert.equal((await allMessages(t, s.id)).length, 2);
  });

  it('answers 409 session_expired once the session outlived its session_ttl, and reads back expired', async () => {
    const s = await createSession(t, 'short');
    await sleep(1100);
    assertError(await send(t, s.id, { content: 'too late' }), 409, 'session_expired');
    const read = await getSession(t, s.id);
    assert.equal(read.status, 'expired');
    assert.equal(read.messages_count, 0);
  });

  it('answers 409 session_message_limit_reached when a turn would pass messages_per_session', async () => {
    const s = await createSession(t, 'limited');
    await turn(t, s.id, 'one');
    await turn(t, s.id, 'two');
    const error = assertError(
      await send(t, s.id, { content: 'three' }),
      409,
      'session_message_limit_reached',
    );
    assert.equal(error.context?.limit, 4);
    assert.equal((await getSession(t, s.id)).messages_count, 4);
  });

  it('answers 502 agent_unavailable when the model fails, keeping the user message', async () => {
    const s = await createSession(t);
    const error = assertError(await send(t, s.id, { content: 'please [[fail]]' }), 502, 'agent_unavailable');
    assert.equal(error.name, 'AgentUnavailableError');
    const stored = await allMessages(t, s.id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m)]),
      [['user', 'please [[fail]]']],
    );
    assert.equal((await getSession(t, s.id)).messages_count, 1);
    assert.equal(textOf(await turn(t, s.id, 'again')), 'Hello! You said: "again".');
  });

  it('answers 504 agent_timeout when the model stalls past stall_ms, keeping the user message', async () => {
    const s = await createSession(t, 'stally');
    const error = assertError(await send(t, s.id, { content: 'wait [[stall]]' }), 504, 'agent_timeout');
    assert.equal(error.context?.timeout, 'stall');
    const stored = await allMessages(t, s.id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m)]),
      [['user', 'wait [[stall]]']],
    );
  });

  it("answers 403 agent_forbidden to a key scoped away from the session's agent, and 404 for unknown sessions", async () => {
    const s = await createSession(t);
    const scoped = await t.createKey('t1', ['other']);
    assertError(await send(t, s.id, { content: 'hi' }, {}, scoped), 403, 'agent_forbidden');
    assertError(await send(t, 'ses_nope', { content: 'hi' }), 404, 'session_not_found');
    const stranger = await t.createKey('t-stranger');
    assertError(await send(t, s.id, { content: 'hi' }, {}, stranger), 404, 'session_not_found');
    assert.deepEqual(await allMessages(t, s.id), []);
  });
});

describe('Idempotency-Key on send-message', () => {
  const key = (k: string) => ({ 'idempotency-key': k });

  it('replays the first answer for the same key and body, storing one turn only', async () => {
    const s = await createSession(t);
    const first = await send(t, s.id, { content: 'once', metadata: { a: 1, b: 2 } }, key('k-1'));
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const again = await send(t, s.id, { metadata: { b: 2, a: 1 }, content: 'once' }, key('k-1'));
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    assert.deepEqual(
      (await allMessages(t, s.id)).map((m) => m.role),
      ['user', 'assistant'],
    );
    const byHand = { role: 'assistant', content: 'from a human', metadata: { by: 'op' } };
    const stored = await send(t, s.id, byHand, key('k-1b'));
    const replayed = await send(t, s.id, byHand, key('k-1b'));
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replayed.json(), stored.json());
    assert.equal((await allMessages(t, s.id)).length, 3);
  });

  it('answers 409 idempotency_key_reused for the same key with another body, storing nothing', async () => {
    const s = await createSession(t);
    assert.equal((await send(t, s.id, { content: 'first' }, key('k-2'))).statusCode, 201);
    assertError(await send(t, s.id, { content: 'second' }, key('k-2')), 409, 'idempotency_key_reused');
    assertError(
      await send(t, s.id, { content: 'first', role: 'assistant' }, key('k-2')),
      409,
      'idempotency_key_reused',
    );
    assert.equal((await allMessages(t, s.id)).length, 2);
  });

  it('replays a finished attempt even after the session was terminated', async () => {
    const s = await createSession(t);
    const first = await send(t, s.id, { content: 'before close' }, key('k-3'));
    await api.post(`/v1/agents/sessions/${s.id}/terminate`, {});
    const again = await send(t, s.id, { content: 'before close' }, key('k-3'));
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json().agent_message.id, first.json().agent_message.id);
  });

  it('scopes a key to its session: the same key on another session is a new turn', async () => {
    const a = await createSession(t);
    const b = await createSession(t);
    const first = await send(t, a.id, { content: 'same' }, key('k-shared'));
    const other = await send(t, b.id, { content: 'same' }, key('k-shared'));
    assert.equal(other.statusCode, 201);
    assert.equal(other.headers['idempotent-replayed'], undefined);
    assert.notEqual(other.json().agent_message.id, first.json().agent_message.id);
    assert.equal((await allMessages(t, b.id)).length, 2);
  });

  it('answers 422 at ["header","idempotency-key"] for an empty, over-long or non-ASCII key', async () => {
    const s = await createSession(t);
    for (const bad of ['', 'k'.repeat(256), 'clé']) {
      assert422(await send(t, s.id, { content: 'x' }, key(bad)), ['header', 'idempotency-key']);
    }
    assert.equal((await send(t, s.id, { content: 'x' }, key('k'.repeat(255)))).statusCode, 201);
    assert.equal((await allMessages(t, s.id)).length, 2);
  });

  it('records nothing for a first attempt that hit a closed session or failed validation', async () => {
    const closed = await createSession(t);
    await api.post(`/v1/agents/sessions/${closed.id}/terminate`, {});
    assertError(await send(t, closed.id, { content: 'hi' }, key('k-4')), 409, 'session_closed');
    assert.equal(await t.store.getIdempotencyRecord(closed.id, 'k-4'), null);
    const s = await createSession(t);
    assert.equal((await send(t, s.id, { content: '' }, key('k-5'))).statusCode, 422);
    assertError(
      await send(t, s.id, { content: [{ file_id: 'fil_nope' }] }, key('k-5')),
      404,
      'file_not_found',
    );
    const ok = await send(t, s.id, { content: 'valid now' }, key('k-5'));
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(ok.headers['idempotent-replayed'], undefined);
  });

  it('does not store the user message again when retrying an attempt the model failed', async () => {
    const s = await createSession(t);
    assertError(await send(t, s.id, { content: 'boom [[fail]]' }, key('k-6')), 502, 'agent_unavailable');
    assertError(await send(t, s.id, { content: 'boom [[fail]]' }, key('k-6')), 502, 'agent_unavailable');
    const stored = await allMessages(t, s.id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m)]),
      [['user', 'boom [[fail]]']],
    );
    assert.equal((await getSession(t, s.id)).messages_count, 1);
    assertError(await send(t, s.id, { content: 'other' }, key('k-6')), 409, 'idempotency_key_reused');
  });

  it('gives two concurrent requests with the same key and body one turn', async () => {
    const s = await createSession(t, 'slow');
    const [a, b] = await Promise.all([
      send(t, s.id, { content: 'together' }, key('k-7')),
      send(t, s.id, { content: 'together' }, key('k-7')),
    ]);
    assert.equal(a.statusCode, 201, a.body);
    assert.equal(b.statusCode, 201, b.body);
    assert.equal(a.json().agent_message.id, b.json().agent_message.id);
    assert.deepEqual(
      (await allMessages(t, s.id)).map((m) => m.role),
      ['user', 'assistant'],
    );
  });

  it('refuses a concurrent request with the same key and another body with 409 idempotency_key_reused', async () => {
    const s = await createSession(t, 'slow');
    const [a, b] = await Promise.all([
      send(t, s.id, { content: 'mine' }, key('k-8')),
      send(t, s.id, { content: 'yours' }, key('k-8')),
    ]);
    assert.equal(a.statusCode, 201, a.body);
    assertError(b, 409, 'idempotency_key_reused');
    assert.deepEqual((await allMessages(t, s.id)).map(textOf)[0], 'mine');
    assert.equal((await allMessages(t, s.id)).length, 2);
  });
});

describe('GET /v1/agents/sessions/{session_id}/messages and /messages/{message_id}', () => {
  it('lists the messages oldest first, with paging', async () => {
    const s = await createSession(t);
    for (const word of ['a', 'b', 'c']) await turn(t, s.id, word);
    const all = await allMessages(t, s.id);
    assert.deepEqual(
      all.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'user', 'assistant'],
    );
    assert.deepEqual(all.filter((m) => m.role === 'user').map(textOf), ['a', 'b', 'c']);
    const p1 = await api.get(`/v1/agents/sessions/${s.id}/messages?limit=4`);
    assert.equal(p1.statusCode, 200);
    assert.deepEqual(p1.json().items, all.slice(0, 4));
    assert.equal(p1.json().next_offset, 4);
    const p2 = await api.get(`/v1/agents/sessions/${s.id}/messages?limit=4&offset=4`);
    assert.deepEqual(p2.json().items, all.slice(4));
    assert.equal(p2.json().next_offset, null);
    assert422(await api.get(`/v1/agents/sessions/${s.id}/messages?limit=101`), ['query', 'limit']);
  });

  it('answers 404 session_not_found and 403 agent_forbidden on the list as on the session', async () => {
    const s = await createSession(t);
    assertError(await api.get('/v1/agents/sessions/ses_nope/messages'), 404, 'session_not_found');
    const scoped = client(t, await t.createKey('t1', ['other']));
    assertError(await scoped.get(`/v1/agents/sessions/${s.id}/messages`), 403, 'agent_forbidden');
  });

  it("reads one message; 404 message_not_found for an unknown id or another session's message", async () => {
    const s = await createSession(t);
    const reply = await turn(t, s.id, 'read me');
    const res = await api.get(`/v1/agents/sessions/${s.id}/messages/${reply.id}`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), reply);
    assertError(await api.get(`/v1/agents/sessions/${s.id}/messages/msg_nope`), 404, 'message_not_found');
    const elsewhere = await createSession(t);
    assertError(
      await api.get(`/v1/agents/sessions/${elsewhere.id}/messages/${reply.id}`),
      404,
      'message_not_found',
    );
    assertError(await api.get(`/v1/agents/sessions/ses_nope/messages/${reply.id}`), 404, 'session_not_found');
  });
});
