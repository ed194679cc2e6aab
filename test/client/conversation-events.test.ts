// The client's conversation event streams (conversation.events() with a session token, client.sessionEvents()
// with an API key) against a listening app: every message and turn event of the session, whoever caused it,
// typed as the schema says; followed across connections the proxy cuts, with none lost or repeated; ended by
// the session's end; and a refusal thrown rather than retried.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConversationEvent, ParleyConversation, ParleyError, type SessionEvent } from '#client';
import { conversationEventSchema, conversationMessageSchema, messageSchema } from '#schemas';
import { useApp } from '../helpers/app.ts';
import { forward, startProxy } from '../helpers/http-proxy.ts';
import { buildSessionApp } from '../helpers/sessions.ts';
import { baseUrl, clientAgents, collect, keyClient, listen, openConversation } from './helpers.ts';

const t = useApp(() => buildSessionApp({}, clientAgents), listen);

const tokenEvent = conversationEventSchema(conversationMessageSchema);
const keyEvent = conversationEventSchema(messageSchema);

const DANA = { id: 'op_7', name: 'Dana' };

/** A conversation that goes through a turn, a handoff, an operator's reply, a handback and its end. */
async function liveConversation(conv: ParleyConversation) {
  const api = keyClient(t);
  await conv.send('Hello there');
  await api.handoff(conv.conversationId, 'asks for a person');
  await api.sendMessage(conv.conversationId, { role: 'assistant', content: 'Dana here.', author: DANA });
  await api.handback(conv.conversationId);
  await api.terminateSession(conv.conversationId);
}

const names = (events: { event: string }[]) => events.map((e) => e.event);

describe('following a conversation', () => {
  it('tells every message and turn event of the conversation, an operator’s reply with its author, and ends with the session', async () => {
    const conv = await openConversation(t);
    const following = collect(conv.events());
    await liveConversation(conv);
    const events: ConversationEvent[] = await following;
    for (const event of events) {
      const parsed = tokenEvent.safeParse(event);
      assert.ok(parsed.success, `${event.event}: ${JSON.stringify(parsed.error?.issues)}`);
    }
    assert.deepEqual(names(events), [
      'message.created',
      'turn.started',
      'message.created',
      'message.completed',
      'turn.completed',
      'session.handoff_requested',
      'message.created',
      'session.handed_back',
      'session.closed',
    ]);
    const operator = events[6];
    assert.ok(operator?.event === 'message.created');
    assert.deepEqual(operator.data.message?.content, [{ type: 'text', text: 'Dana here.' }]);
    assert.deepEqual(operator.data.message?.author, DANA);
    // Ids are the events' places in the session, in order.
    assert.deepEqual(
      events.map((e) => Number(e.id)),
      events.map((_, i) => i + 1),
    );
  });

  it('starts after the id it is given', async () => {
    const conv = await openConversation(t);
    await liveConversation(conv);
    const all = await collect(conv.events());
    const rest = await collect(conv.events({ after: all[4]?.id }));
    assert.deepEqual(rest, all.slice(5));
  });

  it('with an API key, shows messages with their metadata and parses under the session schema', async () => {
    const conv = await openConversation(t);
    const api = keyClient(t);
    await api.sendMessage(conv.conversationId, { content: 'Tagged', metadata: { n: 1 } });
    await api.terminateSession(conv.conversationId);
    const events: SessionEvent[] = await collect(api.sessionEvents(conv.conversationId));
    for (const event of events) {
      const parsed = keyEvent.safeParse(event);
      assert.ok(parsed.success, `${event.event}: ${JSON.stringify(parsed.error?.issues)}`);
    }
    const first = events[0];
    assert.ok(first?.event === 'message.created');
    assert.deepEqual(first.data.message?.metadata, { n: 1 });
    assert.equal(events.at(-1)?.event, 'session.closed');
  });

  it('follows again after its last id when the connection is cut, so no event is lost or told twice', async () => {
    const conv = await openConversation(t);
    await liveConversation(conv);
    const undisturbed = await collect(conv.events());
    // The first two connections are cut after two events each; the third goes through.
    let streams = 0;
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.url.endsWith('/events') && ++streams <= 2 ? { kind: 'cut-after-events', events: 2 } : forward,
    );
    try {
      const token = new ParleyConversation({
        baseUrl: proxy.url,
        conversationId: conv.conversationId,
        token: conv.token,
      });
      const events = await collect(token.events());
      assert.deepEqual(events, undisturbed);
      const resumes = proxy.requests.filter((r) => r.url.endsWith('/events'));
      assert.deepEqual(
        resumes.map((r) => r.headers['last-event-id']),
        [undefined, undisturbed[1]?.id, undisturbed[3]?.id],
      );
    } finally {
      await proxy.close();
    }
  });

  it('gives up with stream_interrupted when every connection is answered and ended at once, never looping on', async () => {
    const conv = await openConversation(t);
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.url.endsWith('/events')
        ? { kind: 'answer', status: 200, headers: { 'content-type': 'text/event-stream' }, body: ': bye' }
        : forward,
    );
    try {
      const through = new ParleyConversation({
        baseUrl: proxy.url,
        conversationId: conv.conversationId,
        token: conv.token,
        maxReconnects: 2,
      });
      const error = await collect(through.events()).catch((e: unknown) => e);
      assert.ok(error instanceof ParleyError, String(error));
      assert.equal(error.code, 'stream_interrupted');
      assert.equal(proxy.requests.filter((r) => r.url.endsWith('/events')).length, 3);
    } finally {
      await proxy.close();
    }
  });

  it('throws a refusal instead of following again: another conversation’s stream is not found', async () => {
    const mine = await openConversation(t);
    const other = await openConversation(t);
    const wrong = new ParleyConversation({
      baseUrl: baseUrl(t),
      conversationId: other.conversationId,
      token: mine.token,
    });
    const error = await collect(wrong.events()).catch((e: unknown) => e);
    assert.ok(error instanceof ParleyError, String(error));
    assert.ok([403, 404].includes(error.status), String(error.status));
  });
});
