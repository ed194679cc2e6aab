// What the model did, on the messages it produced (docs/internals/decisions.md#what-the-model-did):
// `stop_reason` and `usage` on an assistant reply, the same wherever the message appears (plain, streamed,
// replayed, listed, read alone, run, the public family), and null on messages no model produced. The scripted
// provider cuts a reply at the agent's `max_tokens`, as a real model does, so the cut is checked offline.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { openConversation, publicPath, seenByEndUser } from '../../helpers/conversations.ts';
import {
  allMessages,
  client,
  createSession,
  type Message,
  send,
  testAgents,
  textOf,
  useSessionApp,
} from '../../helpers/sessions.ts';
import { parseSse, type SseEvent } from '../../helpers/sse.ts';

/** Replies of more than three words are cut at three. */
const t = useSessionApp({ agents: [...testAgents, { id: 'brief', max_tokens: 3 }] });

interface ModelMessage extends Message {
  stop_reason: string | null;
  usage: { input_tokens: number; output_tokens: number } | null;
}

const question = { content: 'Tell me everything about the plans' };
/** The scripted reply to `question` (`Hello! You said: "…".`), cut at its third word. */
const cutText = 'Hello! You said: ';

/** A streamed send, read whole (the stream ends with the turn). */
async function streamed(path: string, body: unknown, headers: Record<string, string>) {
  const res = await t.app.inject({
    method: 'POST',
    url: `${path}/stream`,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
  assert.equal(res.statusCode, 200, res.body);
  const { events } = parseSse(res.body);
  const of = (name: string): SseEvent => {
    const event = events.find((e) => e.event === name);
    assert.ok(event, `no ${name} in ${res.body}`);
    return event;
  };
  return {
    replayed: res.headers['idempotent-replayed'] === 'true',
    user: of('turn.started').data.user_message as ModelMessage | null,
    message: of('message.completed').data.message as ModelMessage,
    usage: of('turn.completed').data.usage,
  };
}

const nulls = (m: { stop_reason?: unknown; usage?: unknown } | null | undefined) => {
  assert.ok(m, 'a message');
  assert.deepEqual([m.stop_reason, m.usage], [null, null], JSON.stringify(m));
};

describe('a reply cut at max_tokens', () => {
  test('says stop_reason max_tokens, holds max_tokens words, and reports their count as output_tokens', async () => {
    const session = await createSession(t, 'brief');
    const res = await send(t, session.id, question);
    assert.equal(res.statusCode, 201, res.body);
    const reply: ModelMessage = res.json().agent_message;
    assert.equal(textOf(reply), cutText);
    assert.equal(reply.stop_reason, 'max_tokens');
    assert.equal(reply.usage?.output_tokens, 3);
    assert.ok((reply.usage?.input_tokens ?? 0) > 0, res.body);
  });

  test('a reply within max_tokens (or without one) says stop_reason end', async () => {
    const session = await createSession(t, 'demo');
    const res = await send(t, session.id, question);
    const reply: ModelMessage = res.json().agent_message;
    assert.equal(reply.stop_reason, 'end');
    assert.match(textOf(reply), /everything about the plans/);
    assert.equal(reply.usage?.output_tokens, textOf(reply).split(' ').length);
  });
});

describe('the same stop_reason and usage wherever the reply appears', () => {
  let sessionId: string;
  let plain: ModelMessage;

  before(async () => {
    sessionId = (await createSession(t, 'brief')).id;
    const res = await send(t, sessionId, question, { 'idempotency-key': 'k-plain' });
    assert.equal(res.statusCode, 201, res.body);
    plain = res.json().agent_message;
    assert.equal(plain.stop_reason, 'max_tokens');
  });

  test('a replay with the same Idempotency-Key answers the identical message', async () => {
    const again = await send(t, sessionId, question, { 'idempotency-key': 'k-plain' });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json().agent_message, plain);
  });

  test('the list and the single read show the identical message, and the user message with nulls', async () => {
    const [user, listed] = (await allMessages(t, sessionId)) as ModelMessage[];
    assert.deepEqual(listed, plain);
    nulls(user);
    const read = await client(t).get(`/v1/agents/sessions/${sessionId}/messages/${plain.id}`);
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(read.json(), plain);
    const readUser = await client(t).get(`/v1/agents/sessions/${sessionId}/messages/${user?.id}`);
    nulls(readUser.json());
  });

  test('a streamed send completes with the stored message; turn.completed reports the same usage; its replay repeats the message', async () => {
    const path = `/v1/agents/sessions/${sessionId}/messages`;
    const headers = { 'x-api-key': t.apiKey, 'idempotency-key': 'k-stream' };
    const first = await streamed(path, question, headers);
    assert.equal(first.message.stop_reason, 'max_tokens');
    assert.equal(textOf(first.message), cutText);
    assert.deepEqual(first.usage, first.message.usage);
    nulls(first.user);
    const listed = (await allMessages(t, sessionId)).find((m) => m.id === first.message.id);
    assert.deepEqual(listed, first.message);

    const replay = await streamed(path, question, headers);
    assert.ok(replay.replayed);
    assert.deepEqual(replay.message, first.message);
    nulls(replay.user);
    assert.equal(replay.usage, null, 'no model was called for the replay');
  });
});

describe('messages no model produced', () => {
  test('an authored assistant message has null stop_reason and usage, answered, replayed and listed', async () => {
    const session = await createSession(t, 'brief');
    const body = { content: 'A colleague takes over from here on', role: 'assistant' };
    const res = await send(t, session.id, body, { 'idempotency-key': 'k-authored' });
    assert.equal(res.statusCode, 201, res.body);
    nulls(res.json().agent_message);
    const again = await send(t, session.id, body, { 'idempotency-key': 'k-authored' });
    assert.deepEqual(again.json().agent_message, res.json().agent_message);
    const [listed] = await allMessages(t, session.id);
    assert.deepEqual(listed, res.json().agent_message);
  });

  test('inactivity messages have null stop_reason and usage', async () => {
    const c = await openConversation(t, 'brief');
    const res = await c.pub.post('/inactivity', { step: 'warning' });
    assert.equal(res.statusCode, 200, res.body);
    nulls(res.json().message);
    const [listed] = await allMessages(t, c.id);
    nulls(listed as ModelMessage);
  });
});

describe('run and the public family', () => {
  test('run answers the reply with its stop_reason and usage, as the session then lists it', async () => {
    const res = await client(t).post('/v1/agents/brief/run', { messages: [question] });
    assert.equal(res.statusCode, 201, res.body);
    const { agent_message, session_id } = res.json();
    assert.equal(agent_message.stop_reason, 'max_tokens');
    assert.equal(agent_message.usage.output_tokens, 3);
    const [user, listed] = await allMessages(t, session_id);
    nulls(user as ModelMessage);
    assert.deepEqual(listed, agent_message);
  });

  test('the public family shows stop_reason and usage (not metadata), plain, streamed and listed', async () => {
    const c = await openConversation(t, 'brief');
    const res = await c.pub.post('/messages', question);
    assert.equal(res.statusCode, 201, res.body);
    const reply = res.json().agent_message;
    assert.equal(reply.stop_reason, 'max_tokens');
    assert.equal(reply.usage.output_tokens, 3);
    assert.equal('metadata' in reply, false);

    const token = { authorization: `Bearer ${c.session_token}` };
    const stream = await streamed(publicPath(c.id, '/messages'), question, token);
    assert.equal(stream.message.stop_reason, 'max_tokens');
    nulls(stream.user);

    const listed = await c.pub.get('/messages');
    const items = listed.json().items as ModelMessage[];
    const server = await allMessages(t, c.id);
    assert.deepEqual(items, server.map(seenByEndUser));
    assert.deepEqual(items[1], reply);
    assert.deepEqual(items[3], stream.message);
  });

  test('the OpenAPI Message and ConversationMessage declare stop_reason and usage', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    const { schemas } = res.json().components;
    for (const name of ['Message', 'ConversationMessage']) {
      const { properties, required } = schemas[name];
      assert.ok(properties.stop_reason && properties.usage, name);
      assert.ok(required.includes('stop_reason') && required.includes('usage'), name);
      assert.match(JSON.stringify(properties.stop_reason), /max_tokens/);
    }
  });
});
