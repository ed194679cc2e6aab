// The conversation event stream over HTTP (docs/guides/humans.md#the-conversation-event-stream), both
// families, on SQLite and PostgreSQL, read on the wire from a listening app: every message and turn event of
// the session in commit order with ids 1, 2, …, whoever caused it; a resume after Last-Event-ID sends exactly
// what follows; two followers stay in step; the handoff events; each family's view; the end of the session
// ends the stream; bad ids and other conversations are refused before a stream starts; the bounds on open
// streams, and a follower that stops reading is dropped.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { Agent, request } from 'undici';
import { call, perStore, postgresMissing } from '../../helpers/approvals.ts';
import { openConversation, publicPath } from '../../helpers/conversations.ts';
import { assertError, buildSessionApp, client, createSession } from '../../helpers/sessions.ts';
import { type SseEvent, StreamReader } from '../../helpers/sse.ts';
import { waitFor } from '../../helpers/wait.ts';
import { httpRequest, openWire } from '../../helpers/wire.ts';

const pgMissing = await postgresMissing();
const dispatcher = new Agent();
after(() => dispatcher.close());

const types = (events: readonly SseEvent[]) => events.map((e) => e.event);
const ids = (events: readonly SseEvent[]) => events.map((e) => Number(e.id));

perStore('the conversation event stream', pgMissing, (t) => {
  let base: string | undefined;
  const readers: StreamReader[] = [];
  after(() => {
    // Streams that follow a live session never end by themselves: each is cut, its abort expected.
    for (const r of readers) r.body.on('error', () => {}).destroy();
  });

  /** Opens `path` as a stream on the listening app (listening from the first call). */
  async function follow(path: string, headers: Record<string, string>) {
    base ??= await t.app.listen({ port: 0, host: '127.0.0.1' });
    const res = await request(`${base}${path}`, { dispatcher, headers });
    const reader = new StreamReader(res.statusCode, res.headers, res.body);
    readers.push(reader);
    return reader;
  }
  const key = () => ({ 'x-api-key': t.apiKey });
  const sessionEvents = (id: string, headers: Record<string, string> = {}) =>
    follow(`/v1/agents/sessions/${id}/events`, { ...key(), ...headers });
  const until = (reader: StreamReader, n: number) => reader.until((events) => events.length >= n);

  it('tells a turn as it is committed: the messages and the turn events, numbered from 1', async () => {
    const s = await createSession(t, 'shop');
    const stream = await sessionEvents(s.id);
    assert.equal(stream.status, 200);
    const sent = await client(t).post(`/v1/agents/sessions/${s.id}/messages`, { content: 'hello there' });
    assert.equal(sent.statusCode, 201, sent.body);
    const events = await until(stream, 5);
    assert.deepEqual(types(events), [
      'message.created',
      'turn.started',
      'message.created',
      'message.completed',
      'turn.completed',
    ]);
    assert.deepEqual(ids(events), [1, 2, 3, 4, 5]);
    const reply = sent.json().agent_message;
    assert.deepEqual(events[2]?.data.message, reply);
    assert.deepEqual(events[3]?.data.message, reply);
    assert.equal(events[1]?.data.turn_id, events[4]?.data.turn_id);
  });

  it('resumes after Last-Event-ID (or ?after=) with exactly what follows, and two followers stay in step', async () => {
    const s = await createSession(t, 'shop');
    await client(t).post(`/v1/agents/sessions/${s.id}/messages`, { content: 'one' });
    const first = await sessionEvents(s.id);
    const second = await sessionEvents(s.id);
    await client(t).post(`/v1/agents/sessions/${s.id}/messages`, { content: 'two' });
    const all = await until(first, 10);
    assert.deepEqual(ids(all), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(await until(second, 10), all);
    const resumed = await sessionEvents(s.id, { 'last-event-id': '4' });
    assert.deepEqual(await until(resumed, 6), all.slice(4));
    const byQuery = await follow(`/v1/agents/sessions/${s.id}/events?after=9`, key());
    assert.deepEqual(await until(byQuery, 1), all.slice(9));
  });

  it('tells the handoff, what people handle and the handback, the operator with the message', async () => {
    const s = await createSession(t, 'shop');
    const stream = await sessionEvents(s.id);
    const api = client(t);
    await api.post(`/v1/agents/sessions/${s.id}/handoff`, { reason: 'VIP' });
    await api.post(`/v1/agents/sessions/${s.id}/messages`, { content: 'anyone?' });
    const author = { id: 'op_1', name: 'Ana' };
    await api.post(`/v1/agents/sessions/${s.id}/messages`, { role: 'assistant', content: 'Hi!', author });
    await api.post(`/v1/agents/sessions/${s.id}/handback`, {});
    const events = await until(stream, 4);
    assert.deepEqual(types(events), [
      'session.handoff_requested',
      'message.created',
      'message.created',
      'session.handed_back',
    ]);
    assert.equal(events[0]?.data.handoff?.reason, 'VIP');
    assert.deepEqual(events[2]?.data.message?.author, author);
  });

  it('ends with session.closed: nothing follows the end of the session', async () => {
    const s = await createSession(t, 'shop');
    const stream = await sessionEvents(s.id);
    await client(t).post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'done' });
    const events = await stream.all();
    assert.deepEqual(types(events), ['session.closed']);
    assert.equal(events[0]?.data.reason, 'done');
    // A closed session's stream still tells what was, then ends.
    assert.deepEqual(types(await (await sessionEvents(s.id)).all()), ['session.closed']);
  });

  it("shows the end user its conversation's events without metadata, tool events or operators' approvals", async () => {
    const c = await openConversation(t, 'shop');
    const stream = await follow(publicPath(c.id, '/events'), { authorization: `Bearer ${c.session_token}` });
    assert.equal(stream.status, 200);
    const paused = await c.pub.post('/messages', {
      content: `${call('lookup', 'a')} ${call('refund', 'b')} ${call('email', 'c')}`,
    });
    assert.equal(paused.statusCode, 202, paused.body);
    const events = await stream.until((e) => e.some((x) => x.event === 'turn.awaiting_approval'));
    assert.ok(!types(events).includes('tool.started'), 'no tool events: the agent does not expose them');
    const asked = events.filter((e) => e.event === 'tool.approval_requested');
    assert.deepEqual(
      asked.map((e) => e.data.tool),
      ['email'],
    );
    const waiting = events.find((e) => e.event === 'turn.awaiting_approval')?.data.approvals;
    assert.deepEqual(
      waiting?.map((a) => a.tool),
      ['email'],
    );
    const user = events.find((e) => e.event === 'message.created')?.data.message;
    assert.ok(user && !('metadata' in user), 'no metadata for the end user');
    // The API key's family sees every call and approval of the same session.
    const operator = await (await sessionEvents(c.id)).until((e) =>
      e.some((x) => x.event === 'turn.awaiting_approval'),
    );
    assert.ok(types(operator).includes('tool.started'));
    assert.equal(operator.filter((e) => e.event === 'tool.approval_requested').length, 2);
  });

  it("refuses another conversation's stream, a bad Last-Event-ID and an unknown session before a stream starts", async () => {
    const a = await openConversation(t, 'shop');
    const b = await openConversation(t, 'shop');
    const other = await follow(publicPath(b.id, '/events'), { authorization: `Bearer ${a.session_token}` });
    const read = await b.pub.get('');
    assert.equal(read.statusCode, 200);
    const forbidden = await t.app.inject({
      method: 'GET',
      url: publicPath(b.id, ''),
      headers: { authorization: `Bearer ${a.session_token}` },
    });
    assert.equal(other.status, forbidden.statusCode, 'as every route of another conversation');
    assert.ok(other.status === 403 || other.status === 404, String(other.status));
    const s = await createSession(t, 'shop');
    const bad = await t.app.inject({
      method: 'GET',
      url: `/v1/agents/sessions/${s.id}/events`,
      headers: { ...key(), 'last-event-id': 'turn_x:3' },
    });
    assert.equal(bad.statusCode, 422, bad.body);
    assertError(
      await t.app.inject({ method: 'GET', url: '/v1/agents/sessions/ses_nope/events', headers: key() }),
      404,
      'session_not_found',
    );
  });
});

it('bounds open streams per conversation (429 event_stream_limit) and per process (503 server_busy)', async (c) => {
  const app = await buildSessionApp({
    PARLEY_EVENT_STREAMS_PER_CONVERSATION: '2',
    PARLEY_MAX_EVENT_STREAMS: '3',
  });
  c.after(() => app.close());
  const url = await app.app.listen({ port: 0, host: '127.0.0.1' });
  const open: StreamReader[] = [];
  c.after(() => {
    for (const r of open) r.body.on('error', () => {}).destroy();
  });
  const follow = async (sessionId: string) => {
    const res = await request(`${url}/v1/agents/sessions/${sessionId}/events`, {
      dispatcher,
      headers: { 'x-api-key': app.apiKey },
    });
    const reader = new StreamReader(res.statusCode, res.headers, res.body);
    open.push(reader);
    return reader;
  };
  const [a, b, d] = [await createSession(app), await createSession(app), await createSession(app)];
  assert.equal((await follow(a.id)).status, 200);
  assert.equal((await follow(a.id)).status, 200);
  const third = await follow(a.id);
  assert.equal(third.status, 429);
  assert.equal(JSON.parse(await third.body.text()).error.code, 'event_stream_limit');
  assert.equal((await follow(b.id)).status, 200);
  const busy = await follow(d.id);
  assert.equal(busy.status, 503);
  assert.equal(JSON.parse(await busy.body.text()).error.code, 'server_busy');
  // A stream that closes gives its place back.
  const first = open[0];
  first?.body.on('error', () => {}).destroy();
  await waitFor('the place given back', async () => (await follow(d.id)).status === 200);
});

it('drops a follower that stops reading while events wait for it, and gives its place back', {
  timeout: 90_000,
}, async (c) => {
  const app = await buildSessionApp({ PARLEY_EVENT_STREAMS_PER_CONVERSATION: '1' });
  c.after(() => app.close());
  const url = new URL(await app.app.listen({ port: 0, host: '127.0.0.1' }));
  const s = await createSession(app);
  // More than the socket buffers of loopback hold: 300 messages of 30,000 characters.
  const big = 'x'.repeat(30_000);
  for (let i = 0; i < 300; i++) {
    const res = await client(app).post(`/v1/agents/sessions/${s.id}/messages`, {
      role: 'assistant',
      content: big,
    });
    assert.equal(res.statusCode, 201, res.body);
  }
  const slow = await openWire(Number(url.port));
  c.after(() => slow.socket.destroy());
  slow.socket.write(
    httpRequest('GET', `/v1/agents/sessions/${s.id}/events`, { headers: { 'x-api-key': app.apiKey } }),
  );
  await slow.until(': following');
  slow.socket.pause();
  // Its place is taken while it is followed, and given back once it is dropped (10 s behind).
  const second = () =>
    app.app.inject({
      method: 'GET',
      url: `/v1/agents/sessions/${s.id}/events?after=300`,
      headers: { 'x-api-key': app.apiKey },
      payloadAsStream: true,
    });
  const refused = await second();
  assert.equal(refused.statusCode, 429);
  await waitFor(
    'the slow follower dropped',
    async () => {
      const res = await second();
      res.stream().destroy();
      return res.statusCode === 200;
    },
    60_000,
  );
});
