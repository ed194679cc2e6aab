// Streamed sends (docs/internals/decisions.md#streaming) over a real listening server: the raw
// text/event-stream bytes are read and parsed here (a parser of our own, not the one in src), so that
// framing, event order, event ids and headers are checked as a client sees them. Also the errors answered as
// JSON before a stream starts, queued streams on one session, Idempotency-Key replays as events, the
// public family and integrator-authored assistant messages.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { openConversation, publicPath } from '../../helpers/conversations.ts';
import {
  allMessages,
  client,
  createSession,
  type Message,
  send,
  textOf,
  useSessionApp,
} from '../../helpers/sessions.ts';
import { type SseEvent, StreamReader } from '../../helpers/sse.ts';

// --- the app, listening -------------------------------------------------------------------------------

const dispatcher = new Agent();
// Registered before the app's hook: the client lets go of its connections before the app closes.
after(() => dispatcher.close());
let base: string;
const t = useSessionApp({
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});

const streamPath = (sessionId: string) => `/v1/agents/sessions/${sessionId}/messages/stream`;

/** POSTs `body` as JSON to `path` and answers once the status and headers are in. */
async function post(path: string, body: unknown, headers: Record<string, string>): Promise<StreamReader> {
  const res = await request(`${base}${path}`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return new StreamReader(res.statusCode, res.headers, res.body);
}

/** A streamed send on the API-key route. */
const stream = (sessionId: string, body: unknown, headers: Record<string, string> = {}, key = t.apiKey) =>
  post(streamPath(sessionId), body, { 'x-api-key': key, ...headers });

/** A streamed send that must answer 200; returns its events and raw text once it ended. */
async function streamed(sessionId: string, body: unknown, headers: Record<string, string> = {}) {
  const reader = await stream(sessionId, body, headers);
  assert.equal(reader.status, 200, await errorText(reader));
  const events = await reader.all();
  return { reader, events, raw: reader.raw };
}

async function errorText(reader: StreamReader): Promise<string> {
  return reader.status === 200 ? '' : reader.body.text();
}

/** Asserts a JSON error answer (not a stream) with `status` and `code`. */
async function assertJsonError(reader: StreamReader, status: number, code: string) {
  const text = await reader.body.text();
  assert.equal(reader.status, status, text);
  assert.match(String(reader.headers['content-type']), /^application\/json/, text);
  const body = JSON.parse(text);
  assert.equal(body.error?.code, code, text);
  return body.error as { code: string; name: string; message: string };
}

const seqOf = (event: SseEvent) => {
  assert.ok(event.id !== undefined, `${event.event} has no id`);
  const colon = event.id.lastIndexOf(':');
  return { turn: event.id.slice(0, colon), seq: Number(event.id.slice(colon + 1)) };
};

/**
 * Checks a completed turn: turn.started, deltas, message.completed, turn.completed (last), each with the
 * id `<turn_id>:<seq>` the contract gives; returns its parts.
 */
function completedTurn(events: SseEvent[]) {
  const names = events.map((e) => e.event);
  assert.ok(names.length >= 3, names.join(','));
  assert.equal(names[0], 'turn.started', names.join(','));
  assert.equal(names.at(-2), 'message.completed', names.join(','));
  assert.equal(names.at(-1), 'turn.completed', names.join(','));
  assert.ok(
    names.slice(1, -2).every((n) => n === 'message.delta'),
    names.join(','),
  );
  const [started] = events;
  assert.ok(started);
  const turnId = started.data.turn_id;
  assert.match(turnId, /^turn_/);
  let length = 0;
  for (const event of events) {
    assert.equal(event.data.turn_id, turnId, `${event.event} names another turn`);
    const { turn, seq } = seqOf(event);
    assert.equal(turn, turnId, `the id of ${event.event} is ${event.id}`);
    if (event.event === 'turn.started') assert.equal(seq, 0);
    if (event.event === 'message.delta') {
      length += event.data.delta?.text.length ?? 0;
      assert.equal(seq, length + 1, `delta id ${event.id} after ${length} characters`);
    }
    if (event.event === 'message.completed') assert.equal(seq, length + 2, String(event.id));
    if (event.event === 'turn.completed') assert.equal(seq, length + 3, String(event.id));
  }
  const deltas = events.filter((e) => e.event === 'message.delta');
  const message = events.at(-2)?.data.message;
  const done = events.at(-1)?.data;
  assert.ok(message && done);
  return {
    turnId,
    started: started.data,
    deltas,
    text: deltas.map((d) => d.data.delta?.text ?? '').join(''),
    message,
    done,
    ids: events.map((e) => e.id),
  };
}

/** The reply of the scripted agent to `said`, for a session without user or context. */
const scripted = (said: string) => `Hello! You said: "${said}".`;

const api = () => client(t);

// --- the tests ----------------------------------------------------------------------------------------

describe('a streamed send on the API-key route', () => {
  let sessionId: string;
  let result: Awaited<ReturnType<typeof streamed>>;
  let turn: ReturnType<typeof completedTurn>;

  before(async () => {
    sessionId = (await createSession(t)).id;
    result = await streamed(sessionId, { content: 'Hello over the wire', metadata: { tag: 'first' } });
    turn = completedTurn(result.events);
  });

  test('it answers 200 with content-type text/event-stream, cache-control no-cache and x-accel-buffering no', () => {
    const { headers } = result.reader;
    assert.match(String(headers['content-type']), /^text\/event-stream/);
    assert.equal(headers['cache-control'], 'no-cache');
    assert.equal(headers['x-accel-buffering'], 'no');
    assert.equal(headers['idempotent-replayed'], undefined);
  });

  test('the events come as turn.started, message.delta events, message.completed and turn.completed last', () => {
    assert.ok(turn.deltas.length >= 2, `the scripted agent writes word by word: ${turn.deltas.length}`);
  });

  test('every event in the raw bytes has an event line, an id line and a data line', () => {
    const blocks = result.raw.split('\n\n').filter((b) => b !== '' && !b.startsWith(':'));
    assert.equal(blocks.length, result.events.length);
    for (const block of blocks) {
      assert.match(block, /^event: [a-z.]+$/m, block);
      assert.match(block, /^id: turn_[A-Za-z0-9]+:\d+$/m, block);
      assert.match(block, /^data: \{.*\}$/m, block);
    }
  });

  test('the event ids are <turn_id>:<seq>: 0, then 1 + the text so far for deltas, then length + 2 and + 3', () => {
    const length = turn.text.length;
    assert.equal(result.events[0]?.id, `${turn.turnId}:0`);
    assert.equal(turn.deltas.at(-1)?.id, `${turn.turnId}:${length + 1}`);
    assert.equal(result.events.at(-2)?.id, `${turn.turnId}:${length + 2}`);
    assert.equal(result.events.at(-1)?.id, `${turn.turnId}:${length + 3}`);
    assert.equal(new Set(turn.ids).size, turn.ids.length, 'no two events share an id');
  });

  test('the concatenated deltas equal the completed text, which is the agent reply', () => {
    assert.equal(turn.text, textOf(turn.message));
    assert.equal(turn.text, scripted('Hello over the wire'));
  });

  test('each delta names the reply message, index 0 and a text delta', () => {
    for (const delta of turn.deltas) {
      assert.equal(delta.data.message_id, turn.message.id);
      assert.equal(delta.data.index, 0);
      assert.equal(delta.data.delta?.type, 'text');
      assert.ok((delta.data.delta?.text.length ?? 0) > 0, 'no empty delta');
    }
  });

  test('turn.started carries the session id and the stored user message', async () => {
    assert.equal(turn.started.session_id, sessionId);
    const user = turn.started.user_message;
    assert.ok(user);
    assert.equal(user.role, 'user');
    assert.deepEqual(user.content, [{ type: 'text', text: 'Hello over the wire' }]);
    assert.deepEqual(user.metadata, { tag: 'first' });
    const res = await api().get(`/v1/agents/sessions/${sessionId}/messages/${user.id}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), user);
  });

  test('the completed message is the stored one: GET by its id answers the same message', async () => {
    assert.equal(turn.message.role, 'assistant');
    const res = await api().get(`/v1/agents/sessions/${sessionId}/messages/${turn.message.id}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), turn.message);
  });

  test('turn.completed carries the session id, conversation_status active and the usage of the model call', () => {
    assert.equal(turn.done.session_id, sessionId);
    assert.equal(turn.done.conversation_status, 'active');
    assert.ok(turn.done.usage, 'usage is set for a turn that called the model');
    assert.ok(turn.done.usage.input_tokens > 0);
    assert.ok(turn.done.usage.output_tokens > 0);
  });

  test('the session stores the user message and the reply, once each, in that order', async () => {
    const stored = await allMessages(t, sessionId);
    assert.deepEqual(
      stored.map((m) => m.id),
      [turn.started.user_message?.id, turn.message.id],
    );
  });

  test('message.completed has the shape of agent_message of the plain send, with the same text', async () => {
    const other = await createSession(t);
    const res = await send(t, other.id, { content: 'Hello over the wire' });
    assert.equal(res.statusCode, 201, res.body);
    const plain = res.json().agent_message as Message;
    assert.deepEqual(Object.keys(turn.message).sort(), Object.keys(plain).sort());
    assert.equal(textOf(plain), turn.text);
  });
});

describe('a streamed turn that fails', () => {
  test('[[fail]] ends the stream with turn.failed agent_unavailable as its last event, and the user message stays stored', async () => {
    const session = await createSession(t);
    const { events } = await streamed(session.id, { content: 'Please [[fail]] now' });
    assert.deepEqual(
      events.map((e) => e.event).filter((n) => n !== 'message.delta'),
      ['turn.started', 'turn.failed'],
    );
    const failed = events.at(-1);
    assert.ok(failed);
    const turnId = events[0]?.data.turn_id;
    assert.equal(failed.data.turn_id, turnId);
    const sent = events
      .filter((e) => e.event === 'message.delta')
      .map((e) => e.data.delta?.text ?? '')
      .join('');
    assert.equal(failed.id, `${turnId}:${sent.length + 2}`);
    assert.equal(failed.data.partial, false, 'no text was sent before the failure');
    assert.equal(failed.data.error?.code, 'agent_unavailable');
    assert.equal(failed.data.error?.name, 'AgentUnavailableError');
    assert.equal(typeof failed.data.error?.message, 'string');

    const stored = await allMessages(t, session.id);
    assert.deepEqual(
      stored.map((m) => [m.id, m.role, textOf(m)]),
      [[events[0]?.data.user_message?.id, 'user', 'Please [[fail]] now']],
    );
  });

  test('[[stall]] on the stally agent ends the stream with turn.failed agent_timeout', async () => {
    const session = await createSession(t, 'stally');
    const { events } = await streamed(session.id, { content: 'Please [[stall]] now' });
    assert.deepEqual(
      events.map((e) => e.event),
      ['turn.started', 'turn.failed'],
    );
    const failed = events.at(-1);
    assert.equal(failed?.id, `${events[0]?.data.turn_id}:2`);
    assert.equal(failed?.data.error?.code, 'agent_timeout');
    assert.equal(failed?.data.error?.name, 'AgentTimeoutError');
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => m.role),
      ['user'],
    );
  });

  test('after a failed streamed turn the session streams the next message normally', async () => {
    const session = await createSession(t);
    await streamed(session.id, { content: 'Break [[fail]]' });
    const { events } = await streamed(session.id, { content: 'Try again' });
    const turn = completedTurn(events);
    assert.equal(turn.text, scripted('Try again'));
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => m.role),
      ['user', 'user', 'assistant'],
    );
  });
});

describe('errors found before the stream starts are JSON with their status', () => {
  test('a closed session answers 409 session_closed as JSON, not a stream, and stores nothing', async () => {
    const session = await createSession(t);
    assert.equal((await api().post(`/v1/agents/sessions/${session.id}/terminate`, {})).statusCode, 200);
    await assertJsonError(await stream(session.id, { content: 'Anyone?' }), 409, 'session_closed');
    assert.deepEqual(await allMessages(t, session.id), []);
  });

  test('an invalid body answers 422 as JSON with its detail', async () => {
    const session = await createSession(t);
    const reader = await stream(session.id, { content: 'hi', extra: true });
    const text = await reader.body.text();
    assert.equal(reader.status, 422, text);
    assert.match(String(reader.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(text).detail[0].loc, ['body', 'extra']);
  });

  test('an invalid Idempotency-Key answers 422 at ["header","idempotency-key"] as JSON', async () => {
    const session = await createSession(t);
    const reader = await stream(session.id, { content: 'hi' }, { 'idempotency-key': 'é'.repeat(3) });
    const text = await reader.body.text();
    assert.equal(reader.status, 422, text);
    assert.match(String(reader.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(text).detail[0].loc, ['header', 'idempotency-key']);
  });

  test('no API key answers 401 unauthorized as JSON, and an unknown key 401 invalid_api_key', async () => {
    const session = await createSession(t);
    await assertJsonError(await post(streamPath(session.id), { content: 'hi' }, {}), 401, 'unauthorized');
    await assertJsonError(await stream(session.id, { content: 'hi' }, {}, 'pk_nope'), 401, 'invalid_api_key');
  });

  test('an unknown session answers 404 session_not_found as JSON', async () => {
    await assertJsonError(await stream('ses_doesnotexist', { content: 'hi' }), 404, 'session_not_found');
  });

  test('on the public route, role assistant answers 403 role_not_allowed as JSON and stores nothing', async () => {
    const conv = await openConversation(t);
    const reader = await post(
      publicPath(conv.id, '/messages/stream'),
      { content: 'I am the agent now', role: 'assistant' },
      { authorization: `Bearer ${conv.session_token}` },
    );
    await assertJsonError(reader, 403, 'role_not_allowed');
    assert.deepEqual(await allMessages(t, conv.id), []);
  });

  test('on the public route, no bearer token answers 401 unauthorized as JSON', async () => {
    const conv = await openConversation(t);
    const reader = await post(publicPath(conv.id, '/messages/stream'), { content: 'hi' }, {});
    await assertJsonError(reader, 401, 'unauthorized');
  });

  test('on the public route, the token of another conversation answers 403 forbidden as JSON', async () => {
    const mine = await openConversation(t);
    const theirs = await openConversation(t);
    const reader = await post(
      publicPath(theirs.id, '/messages/stream'),
      { content: 'hi' },
      { authorization: `Bearer ${mine.session_token}` },
    );
    await assertJsonError(reader, 403, 'forbidden');
  });

  test('a stream beyond the eight that may wait answers 409 session_busy as JSON with Retry-After 1', async () => {
    const session = await createSession(t, 'slow');
    const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    const first = await stream(session.id, { content: long });
    assert.equal(first.status, 200);
    await first.until((events) => events.length > 0);
    const readers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => stream(session.id, { content: `queued ${i}` })),
    );
    const busy = readers.filter((r) => r.status !== 200);
    assert.ok(busy.length >= 4, `${busy.length} of 12 refused while one runs and at most 8 wait`);
    for (const reader of busy) {
      assert.equal(reader.headers['retry-after'], '1');
      await assertJsonError(reader, 409, 'session_busy');
    }
    completedTurn(await first.all());
    for (const reader of readers.filter((r) => r.status === 200)) completedTurn(await reader.all());
  });
});

describe('two streams to one session at once', () => {
  test('the second waits for the first, both complete, and the stored messages alternate with each reply quoting its own message', async () => {
    const session = await createSession(t, 'slow');
    const words = (tag: string) => Array.from({ length: 40 }, (_, i) => `${tag}${i}`).join(' ');
    const firstText = `first ${words('a')}`;
    const secondText = `second ${words('b')}`;

    const first = await stream(session.id, { content: firstText });
    assert.equal(first.status, 200);
    await first.until((events) => events.length > 0);
    assert.ok(!first.events.some((e) => e.event === 'turn.completed'), 'the first turn is still running');
    // Sent while the first turn runs; its answer begins once the first turn is over.
    const secondResponse = stream(session.id, { content: secondText });
    const one = completedTurn(await first.all());
    const second = await secondResponse;
    assert.equal(second.status, 200);
    const two = completedTurn(await second.all());

    assert.notEqual(one.turnId, two.turnId);
    assert.equal(one.text, scripted(firstText));
    assert.equal(two.text, scripted(secondText));
    const secondUser = two.started.user_message;
    assert.ok(secondUser);
    assert.ok(
      secondUser.created_at >= one.message.created_at,
      `the second user message (${secondUser.created_at}) is stored after the first reply (${one.message.created_at})`,
    );

    const stored = await allMessages(t, session.id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m)]),
      [
        ['user', firstText],
        ['assistant', scripted(firstText)],
        ['user', secondText],
        ['assistant', scripted(secondText)],
      ],
    );
    assert.deepEqual(
      stored.map((m) => m.id),
      [one.started.user_message?.id, one.message.id, secondUser.id, two.message.id],
    );
  });
});

describe('Idempotency-Key on the streamed send', () => {
  const key = 'stream-key-1';
  const body = { content: 'Idempotent hello' };
  let sessionId: string;
  let original: Awaited<ReturnType<typeof streamed>>;
  let replay: Awaited<ReturnType<typeof streamed>>;
  let first: ReturnType<typeof completedTurn>;
  let again: ReturnType<typeof completedTurn>;

  before(async () => {
    sessionId = (await createSession(t)).id;
    original = await streamed(sessionId, body, { 'idempotency-key': key });
    replay = await streamed(sessionId, body, { 'idempotency-key': key });
    first = completedTurn(original.events);
    again = completedTurn(replay.events);
  });

  test('the first stream is not marked as replayed; the replay is a 200 event stream with idempotent-replayed: true', () => {
    assert.equal(original.reader.headers['idempotent-replayed'], undefined);
    assert.equal(replay.reader.headers['idempotent-replayed'], 'true');
    assert.match(String(replay.reader.headers['content-type']), /^text\/event-stream/);
    assert.equal(replay.reader.headers['cache-control'], 'no-cache');
    assert.equal(replay.reader.headers['x-accel-buffering'], 'no');
  });

  test('the replay re-emits the turn with the same turn id, the same user message and the same completed message', () => {
    assert.equal(again.turnId, first.turnId);
    assert.deepEqual(again.started.user_message, first.started.user_message);
    assert.equal(again.started.session_id, sessionId);
    assert.deepEqual(again.message, first.message);
    assert.equal(again.text, first.text);
    for (const delta of again.deltas) assert.equal(delta.data.message_id, first.message.id);
  });

  test('the replay ends on the same message.completed and turn.completed event ids as the original', () => {
    assert.equal(replay.events.at(-2)?.id, original.events.at(-2)?.id);
    assert.equal(replay.events.at(-1)?.id, original.events.at(-1)?.id);
    assert.equal(replay.events[0]?.id, original.events[0]?.id);
  });

  test('the replay reports usage null', () => {
    assert.ok(first.done.usage, 'the original reports its usage');
    assert.equal(again.done.usage, null);
    assert.equal(again.done.conversation_status, 'active');
  });

  test('the replay stored nothing: the session holds one user message and one reply', async () => {
    assert.deepEqual(
      (await allMessages(t, sessionId)).map((m) => m.id),
      [first.started.user_message?.id, first.message.id],
    );
  });

  test('the same key with a different body answers 409 idempotency_key_reused as JSON', async () => {
    const reader = await stream(sessionId, { content: 'Something else' }, { 'idempotency-key': key });
    await assertJsonError(reader, 409, 'idempotency_key_reused');
  });

  test('the same key and body on the plain route answer 409 idempotency_key_reused: the fingerprint includes the operation', async () => {
    const res = await send(t, sessionId, body, { 'idempotency-key': key });
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json().error.code, 'idempotency_key_reused');
  });

  test('a key first used on the plain route is refused on the stream route with the same body', async () => {
    const res = await send(t, sessionId, { content: 'Plain first' }, { 'idempotency-key': 'plain-key' });
    assert.equal(res.statusCode, 201, res.body);
    const reader = await stream(sessionId, { content: 'Plain first' }, { 'idempotency-key': 'plain-key' });
    await assertJsonError(reader, 409, 'idempotency_key_reused');
  });

  test('a finished streamed turn is replayed as events even after the session was closed', async () => {
    const session = await createSession(t);
    const one = completedTurn((await streamed(session.id, body, { 'idempotency-key': 'k-closed' })).events);
    assert.equal((await api().post(`/v1/agents/sessions/${session.id}/terminate`, {})).statusCode, 200);
    const later = await streamed(session.id, body, { 'idempotency-key': 'k-closed' });
    assert.equal(later.reader.headers['idempotent-replayed'], 'true');
    const two = completedTurn(later.events);
    assert.equal(two.turnId, one.turnId);
    assert.deepEqual(two.message, one.message);
  });

  test('two streams with the same key at once make one turn: both report it with the same ids and it is stored once', async () => {
    const session = await createSession(t, 'slow');
    const content = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
    const headers = { 'idempotency-key': 'k-concurrent' };
    const [a, b] = await Promise.all([
      streamed(session.id, { content }, headers),
      streamed(session.id, { content }, headers),
    ]);
    const one = completedTurn(a.events);
    const two = completedTurn(b.events);
    assert.equal(one.turnId, two.turnId);
    assert.deepEqual(one.message, two.message);
    assert.equal(one.started.user_message?.id, two.started.user_message?.id);
    assert.equal(a.events.at(-1)?.id, b.events.at(-1)?.id);
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => m.role),
      ['user', 'assistant'],
    );
  });
});

describe('the public stream route', () => {
  test('with the session token it streams the turn, and its events carry the conversation id as session_id', async () => {
    const conv = await openConversation(t);
    const reader = await post(
      publicPath(conv.id, '/messages/stream'),
      { content: 'Hello from the widget' },
      { authorization: `Bearer ${conv.session_token}` },
    );
    assert.equal(reader.status, 200, await errorText(reader));
    assert.match(String(reader.headers['content-type']), /^text\/event-stream/);
    assert.equal(reader.headers['cache-control'], 'no-cache');
    assert.equal(reader.headers['x-accel-buffering'], 'no');
    const turn = completedTurn(await reader.all());
    assert.equal(turn.started.session_id, conv.id);
    assert.equal(turn.done.session_id, conv.id);
    assert.equal(turn.done.conversation_status, 'active');
    assert.equal(turn.text, scripted('Hello from the widget'));

    const res = await conv.pub.get('/messages');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      (res.json().items as Message[]).map((m) => m.id),
      [turn.started.user_message?.id, turn.message.id],
    );
  });
});

describe('an integrator-authored assistant message through the API-key stream route', () => {
  test('it runs as turn.started with that message, no deltas, message.completed with the same message, then turn.completed', async () => {
    const session = await createSession(t);
    const { events } = await streamed(session.id, {
      content: 'A human agent takes over.',
      role: 'assistant',
      metadata: { by: 'operator' },
    });
    assert.deepEqual(
      events.map((e) => e.event),
      ['turn.started', 'message.completed', 'turn.completed'],
    );
    const turn = completedTurn(events);
    const authored = turn.started.user_message;
    assert.ok(authored);
    assert.equal(authored.role, 'assistant');
    assert.deepEqual(authored.content, [{ type: 'text', text: 'A human agent takes over.' }]);
    assert.deepEqual(authored.metadata, { by: 'operator' });
    assert.deepEqual(turn.message, authored);
    assert.deepEqual(
      events.map((e) => e.id),
      [`${turn.turnId}:0`, `${turn.turnId}:2`, `${turn.turnId}:3`],
    );
    assert.equal(turn.done.usage, null);

    const stored = await allMessages(t, session.id);
    assert.deepEqual(stored, [authored]);
  });

  test('its replay with the same Idempotency-Key re-emits the same three events', async () => {
    const session = await createSession(t);
    const body = { content: 'Handing over.', role: 'assistant' };
    const headers = { 'idempotency-key': 'k-authored' };
    const one = await streamed(session.id, body, headers);
    const two = await streamed(session.id, body, headers);
    assert.equal(two.reader.headers['idempotent-replayed'], 'true');
    assert.deepEqual(
      two.events.map((e) => [e.event, e.id]),
      one.events.map((e) => [e.event, e.id]),
    );
    assert.deepEqual(two.events[1]?.data.message, one.events[1]?.data.message);
    assert.equal((await allMessages(t, session.id)).length, 1);
  });
});
