// Handing a session to people and back over HTTP (docs/guides/humans.md), both families, on SQLite and
// PostgreSQL: the integrator's handoff and handback, the end user's request where the agent allows it, the
// agent's own handoff_to_human tool; sends while people handle the session are stored and call no model
// (plain and streamed); operators' messages carry their author, and the model sees them after the handback;
// the webhook events; refusals change nothing.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { perStore, postgresMissing } from '../../helpers/approvals.ts';
import { publicClient, startConversation } from '../../helpers/conversations.ts';
import {
  allMessages,
  assert422,
  assertError,
  client,
  createSession,
  textOf,
} from '../../helpers/sessions.ts';
import { parseSse } from '../../helpers/sse.ts';
import { waitFor } from '../../helpers/wait.ts';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.ts';

const pgMissing = await postgresMissing();

const operator = { id: 'op_7', name: 'Dana' };

perStore('handing a session to people', pgMissing, (t) => {
  const sessionOf = (id: string) => {
    const c = client(t);
    const base = `/v1/agents/sessions/${id}`;
    return {
      handoff: (body?: unknown) => c.post(`${base}/handoff`, body),
      handback: () => c.post(`${base}/handback`, {}),
      send: (body: unknown, headers?: Record<string, string>) => c.post(`${base}/messages`, body, headers),
      stream: (body: unknown) => c.post(`${base}/messages/stream`, body),
      get: () => c.get(base),
    };
  };

  it('hands off with a reason, and a repeated handoff keeps the first one', async () => {
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    assert.equal((await api.get()).json().handled_by, 'agent');
    assert.equal((await api.get()).json().handoff, null);
    const res = await api.handoff({ reason: 'refund above the limit' });
    assert.equal(res.statusCode, 200, res.body);
    const session = res.json();
    assert.equal(session.handled_by, 'humans');
    assert.equal(session.handoff.reason, 'refund above the limit');
    assert.equal(session.handoff.by, 'integrator');
    const again = await api.handoff({ reason: 'another reason' });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json().handoff, session.handoff);
    assert.deepEqual((await api.get()).json().handoff, session.handoff);
  });

  it('stores a send while people handle the session and calls no model: 201 without a reply', async () => {
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    await api.handoff();
    const res = await api.send({ content: 'Is anyone there?' });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json(), { agent_message: null, handled_by: 'humans' });
    const messages = await allMessages(t, s.id);
    assert.deepEqual(
      messages.map((m) => [m.role, textOf(m)]),
      [['user', 'Is anyone there?']],
    );
  });

  it('replays a keyed send stored for people, without storing it twice', async () => {
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    await api.handoff();
    const first = await api.send({ content: 'hello people' }, { 'idempotency-key': 'k-humans' });
    const second = await api.send({ content: 'hello people' }, { 'idempotency-key': 'k-humans' });
    assert.equal(second.statusCode, 201, second.body);
    assert.deepEqual(second.json(), first.json());
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal((await allMessages(t, s.id)).length, 1);
  });

  it('streams a send while people handle the session as message.created, then ends', async () => {
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    await api.handoff();
    const res = await api.stream({ content: 'streamed to people' });
    assert.equal(res.statusCode, 200, res.body);
    const { events } = parseSse(res.body);
    assert.deepEqual(
      events.map((e) => e.event),
      ['message.created'],
    );
    const data = events[0]?.data as { message: { role: string; content: { text: string }[] } };
    assert.equal(data.message.role, 'user');
    assert.equal(data.message.content[0]?.text, 'streamed to people');
  });

  it("stores an operator's reply with its author, and the model sees it after the handback", async () => {
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    await api.handoff();
    await api.send({ content: 'I want my money back' });
    const reply = await api.send({ role: 'assistant', content: 'Refunded, 20 EUR.', author: operator });
    assert.equal(reply.statusCode, 201, reply.body);
    assert.deepEqual(reply.json().agent_message.author, operator);
    const back = await api.handback();
    assert.equal(back.statusCode, 200, back.body);
    assert.equal(back.json().handled_by, 'agent');
    assert.equal(back.json().handoff, null);
    const answered = await api.send({ content: 'thanks' });
    assert.equal(answered.statusCode, 201, answered.body);
    assert.ok(answered.json().agent_message, 'the agent answers again');
    const messages = await allMessages(t, s.id);
    assert.deepEqual(
      messages.map((m) => [m.role, (m as { author?: unknown }).author ?? null]),
      [
        ['user', null],
        ['assistant', operator],
        ['user', null],
        ['assistant', null],
      ],
    );
    // The scripted model counts what it was given: more than the same message alone, the history with the
    // operator's reply in it.
    const fresh = await createSession(t, 'shop');
    const alone = (await sessionOf(fresh.id).send({ content: 'thanks' })).json().agent_message;
    assert.ok(answered.json().agent_message.usage.input_tokens > alone.usage.input_tokens);
    assert.equal((await api.get()).json().messages_count, 4);
  });

  it('refuses an author on a user message with 422 and stores nothing', async () => {
    const s = await createSession(t, 'shop');
    const res = await sessionOf(s.id).send({ content: 'hi', author: operator });
    assert422(res, ['body', 'author']);
    assert.equal((await allMessages(t, s.id)).length, 0);
  });

  it('answers 409 for a handoff or handback of a closed session, changing nothing', async () => {
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    await client(t).post(`/v1/agents/sessions/${s.id}/terminate`, {});
    assertError(await api.handoff({ reason: 'late' }), 409, 'session_closed');
    assertError(await api.handback(), 409, 'session_closed');
    assert.equal((await api.get()).json().handled_by, 'agent');
  });

  it('answers 404 for a handoff of an unknown session', async () => {
    assertError(await sessionOf('ses_nope').handoff(), 404, 'session_not_found');
  });

  it('hands off by the agent when its model calls handoff_to_human, with the reply in the same commit', async () => {
    const s = await createSession(t, 'desk');
    const api = sessionOf(s.id);
    const res = await api.send({ content: '[[tool:handoff_to_human {"reason":"wants a person"}]]' });
    assert.equal(res.statusCode, 201, res.body);
    assert.ok(res.json().agent_message);
    const session = (await api.get()).json();
    assert.equal(session.handled_by, 'humans');
    assert.deepEqual(
      { by: session.handoff.by, reason: session.handoff.reason },
      { by: 'agent', reason: 'wants a person' },
    );
    assert.deepEqual(await api.send({ content: 'hello?' }).then((r) => r.json()), {
      agent_message: null,
      handled_by: 'humans',
    });
  });

  it('lets the end user ask for a human where the agent allows it, and only there', async () => {
    const allowed = await startConversation(t, 'desk');
    const user = publicClient(t, allowed.conversation.id, allowed.session_token);
    const res = await user.post('/handoff', { reason: 'I want a person' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().handled_by, 'humans');
    assert.equal(res.json().handoff.by, 'user');
    const sent = await user.post('/messages', { content: 'still there?' });
    assert.deepEqual(sent.json(), { agent_message: null, handled_by: 'humans' });
    // The operator's reply reaches the end user with the operator's name, and without its metadata.
    const answered = await client(t).post(`/v1/agents/sessions/${allowed.conversation.id}/messages`, {
      role: 'assistant',
      content: 'Dana here, how can I help?',
      author: operator,
      metadata: { desk: 'tier-2' },
    });
    assert.equal(answered.statusCode, 201, answered.body);
    const seen = (await user.get('/messages')).json().items.at(-1);
    assert.deepEqual(seen.author, operator);
    assert.equal('metadata' in seen, false);

    const refused = await startConversation(t, 'shop');
    const other = publicClient(t, refused.conversation.id, refused.session_token);
    assertError(await other.post('/handoff', {}), 403, 'handoff_not_allowed');
    assert.equal((await other.get()).json().handled_by, 'agent');
  });

  it('refuses operator messages and handbacks from the end user', async () => {
    const started = await startConversation(t, 'desk');
    const user = publicClient(t, started.conversation.id, started.session_token);
    await user.post('/handoff', {});
    assertError(
      await user.post('/messages', { role: 'assistant', content: 'I am staff', author: operator }),
      403,
      'role_not_allowed',
    );
    assert.equal((await user.post('/handback', {})).statusCode, 404);
    assert.equal((await user.get()).json().handled_by, 'humans');
  });

  it('reports session.handoff_requested, message.created and session.handed_back to webhooks', async (c) => {
    const receiver = await startWebhookReceiver();
    c.after(() => receiver.close());
    const hook = await client(t).post('/v1/agents/webhooks', {
      url: receiver.url,
      events: ['session.handoff_requested', 'session.handed_back', 'message.created'],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    c.after(() => client(t).delete(`/v1/agents/webhooks/${hook.json().id}`));
    const s = await createSession(t, 'shop');
    const api = sessionOf(s.id);
    await api.handoff({ reason: 'bridge' });
    await api.send({ content: 'to the desk' });
    await api.send({ role: 'assistant', content: 'from the desk', author: operator });
    await api.handback();
    const mine = () => receiver.requests.filter((r) => (r.body?.data.session_id ?? r.body?.data.id) === s.id);
    await waitFor('four deliveries', () => mine().length === 4);
    assert.deepEqual(
      mine().map((r) => r.body?.type),
      ['session.handoff_requested', 'message.created', 'message.created', 'session.handed_back'],
    );
    const [requested, , authored, handedBack] = mine();
    assert.equal(requested?.body?.data.reason, 'bridge');
    assert.equal(requested?.body?.data.handled_by, 'humans');
    const message = authored?.body?.data.message as { author: unknown } | undefined;
    assert.deepEqual(message?.author, operator);
    assert.equal(handedBack?.body?.data.handled_by, 'agent');
  });
});
