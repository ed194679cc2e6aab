// Message metadata is the integrator's (docs/internals/decisions.md#message-metadata-is-the-integrators): the
// public family answers messages without it (the page of messages, a send's answer, a stream's messages, an
// inactivity message) while the API-key family still shows it; a front-end may still attach metadata to the
// user's message, for the integrator to read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openConversation } from '../../helpers/conversations.ts';
import { allMessages, client, send, useSessionApp } from '../../helpers/sessions.ts';
import { parseSse, type SseEvent } from '../../helpers/sse.ts';

const t = useSessionApp();

const secret = { crm: 'integrator-only' };

/** The events of a streamed send that answered 200. */
async function eventsOf(answer: Promise<{ statusCode: number; body: string }>): Promise<SseEvent[]> {
  const res = await answer;
  assert.equal(res.statusCode, 200, res.body);
  return parseSse(res.body).events;
}

/** The messages an event stream carries: the turn's user message and the stored reply. */
const streamedMessages = (events: SseEvent[]) =>
  events.flatMap((e) => [e.data.user_message, e.data.message]).filter((m) => m != null);

const hasMetadata = (m: object) => Object.hasOwn(m, 'metadata');

describe('message metadata in the public family', () => {
  it('is absent from the public page of messages, shown on the API-key page', async () => {
    const c = await openConversation(t);
    const sent = await send(t, c.id, { content: 'from the CRM', role: 'assistant', metadata: secret });
    assert.equal(sent.statusCode, 201, sent.body);
    const res = await c.pub.get('/messages');
    assert.equal(res.statusCode, 200, res.body);
    const [shown] = res.json().items;
    assert.equal(shown.id, sent.json().agent_message.id);
    assert.equal(hasMetadata(shown), false, res.body);
    assert.doesNotMatch(res.body, /integrator-only/);
    assert.deepEqual((await allMessages(t, c.id))[0]?.metadata, secret);
  });

  it('is absent from a public send answer, replayed or not, and present in the API-key one', async () => {
    const c = await openConversation(t);
    const key = { 'idempotency-key': 'meta-1' };
    const body = { content: 'hello', metadata: { page: '/pricing' } };
    const first = await c.pub.post('/messages', body, key);
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(hasMetadata(first.json().agent_message), false, first.body);
    const replay = await c.pub.post('/messages', body, key);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json(), first.json());
    // Written by the front-end, the user's metadata still reaches the integrator.
    const [user, reply] = await allMessages(t, c.id);
    assert.deepEqual(user?.metadata, { page: '/pricing' });
    assert.equal(reply?.metadata, null);
    const own = await send(t, c.id, { content: 'through the key' });
    assert.equal(own.statusCode, 201, own.body);
    assert.equal(own.json().agent_message.metadata, null);
  });

  it("is absent from a public stream's messages (turn.started, message.completed, a replay), present through the key", async () => {
    const c = await openConversation(t);
    const headers = { 'idempotency-key': 'meta-stream' };
    const body = { content: 'stream me', metadata: { page: '/home' } };
    for (const attempt of ['first', 'replay']) {
      const events = await eventsOf(c.pub.post('/messages/stream', body, headers));
      assert.equal(events.at(-1)?.event, 'turn.completed', attempt);
      const messages = streamedMessages(events);
      assert.equal(messages.length, 2, attempt);
      for (const m of messages) assert.equal(hasMetadata(m), false, `${attempt}: ${JSON.stringify(m)}`);
    }
    const keyed = await eventsOf(
      client(t).post(`/v1/agents/sessions/${c.id}/messages/stream`, { content: 'keyed', metadata: secret }),
    );
    const [user, reply] = streamedMessages(keyed);
    assert.deepEqual(user?.metadata, secret);
    assert.equal(reply?.metadata, null);
  });

  it('is absent from the message an inactivity step answers with', async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/inactivity', { step: 'warning' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(hasMetadata(res.json().message), false, res.body);
  });

  it('is absent from the OpenAPI Message of the public routes, present in the API-key one', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const { components, paths } = res.json();
    assert.equal(hasMetadata(components.schemas.ConversationMessage.properties), false);
    assert.ok(hasMetadata(components.schemas.Message.properties));
    const publicPaths = Object.keys(paths).filter((p) => p.startsWith('/v1/public/'));
    const publicText = JSON.stringify(publicPaths.map((p) => paths[p]));
    assert.match(publicText, /ConversationMessage/);
    assert.doesNotMatch(publicText, /"#\/components\/schemas\/(Message|AgentReply)"/);
  });
});
