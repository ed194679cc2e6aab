// Run an agent once: POST /v1/agents/{agent_id}/run stores 1–10 messages in a new session and answers
// with the agent's reply and the session's id — every status the route answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tinyPng } from '../../helpers/multipart.ts';
import {
  allMessages,
  assert422,
  assertError,
  client,
  createUser,
  getSession,
  textOf,
  turn,
  upload,
  useSessionApp,
} from '../../helpers/sessions.ts';

const t = useSessionApp();
const api = client(t);

const run = (body: unknown, agent = 'demo', c = api) => c.post(`/v1/agents/${agent}/run`, body);

/** How many sessions tenant t1 has: a refused run must not leave one behind. */
async function sessionCount(): Promise<number> {
  const res = await api.get('/v1/agents/sessions?limit=100');
  assert.equal(res.statusCode, 200);
  return res.json().items.length;
}

describe('POST /v1/agents/{agent_id}/run', () => {
  it('answers 201 with the reply and the id of a new active session holding the messages, then the reply', async () => {
    const res = await run({
      messages: [
        { content: 'first question' },
        { role: 'assistant', content: 'an earlier answer', metadata: { by: 'crm' } },
        { content: [{ text: 'second' }, { type: 'text', text: 'question' }], metadata: { m: 1 } },
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    const { agent_message: reply, session_id } = res.json();
    assert.deepEqual(Object.keys(res.json()).sort(), ['agent_message', 'session_id']);
    assert.match(session_id, /^ses_/);
    assert.equal(reply.role, 'assistant');
    assert.equal(textOf(reply), 'Hello! You said: "second question".');
    const stored = await allMessages(t, session_id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m), m.metadata]),
      [
        ['user', 'first question', null],
        ['assistant', 'an earlier answer', { by: 'crm' }],
        ['user', 'secondquestion', { m: 1 }],
        ['assistant', textOf(reply), null],
      ],
    );
    assert.deepEqual(stored.at(-1), reply);
    const session = await getSession(t, session_id);
    assert.equal(session.status, 'active');
    assert.equal(session.agent_id, 'demo');
    assert.equal(session.messages_count, 4);
    assert.equal(session.last_message_at, reply.created_at);
  });

  it("makes the run's context and metadata the session's; the agent sees the context and the user, not the metadata", async () => {
    const user = await createUser(t, { reference: 'run-user', name: 'Grace' });
    const res = await run({
      messages: [{ content: 'hello' }],
      user: { reference: 'run-user' },
      context: { k: 'v' },
      metadata: { secret: 'run-meta' },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(textOf(res.json().agent_message), 'Hello Grace! You said: "hello". Context: k: "v".');
    const session = await getSession(t, res.json().session_id);
    assert.deepEqual(session.context, { k: 'v' });
    assert.deepEqual(session.metadata, { secret: 'run-meta' });
    assert.deepEqual(session.user, { id: user.id, reference: 'run-user' });
  });

  it('persists the session even with persist false, as this version of the API does', async () => {
    const res = await run({ messages: [{ content: 'ephemeral?' }], persist: false });
    assert.equal(res.statusCode, 201, res.body);
    const session = await getSession(t, res.json().session_id);
    assert.equal(session.messages_count, 2);
    assert.equal((await allMessages(t, session.id)).length, 2);
  });

  it('leaves a session that send-message can continue', async () => {
    const res = await run({ messages: [{ content: 'start' }], context: { plan: 'pro' } });
    const sessionId = res.json().session_id;
    const reply = await turn(t, sessionId, 'continue');
    assert.equal(textOf(reply), 'Hello! You said: "continue". Context: plan: "pro".');
    assert.equal((await getSession(t, sessionId)).messages_count, 4);
  });

  it('takes files in the messages and counts them as attachments', async () => {
    const png = await upload(t, tinyPng, 'run.png', 'image/png');
    const res = await run({ messages: [{ content: [{ text: 'see' }, { type: 'image', file_id: png }] }] });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(textOf(res.json().agent_message), 'Hello! You said: "see". Attachments: 1.');
  });

  it('answers 422 for no messages or more than 10, and for an invalid message, without creating a session', async () => {
    const before = await sessionCount();
    assert422(await run({ messages: [] }), ['body', 'messages'], 'too_short');
    const eleven = Array.from({ length: 11 }, (_, i) => ({ content: `m${i}` }));
    assert422(await run({ messages: eleven }), ['body', 'messages'], 'too_long');
    assert422(await run({}), ['body', 'messages'], 'missing');
    assert422(await run({ messages: [{ content: 'ok' }, { content: 'x', role: 'system' }] }), [
      'body',
      'messages',
      1,
      'role',
    ]);
    assert422(await run({ messages: [{ content: 'ok' }], persist: 'no' }), ['body', 'persist']);
    assert422(
      await run({ messages: [{ content: 'ok' }], extra: true }),
      ['body', 'extra'],
      'extra_forbidden',
    );
    assert.equal(
      (await run({ messages: Array.from({ length: 10 }, (_, i) => ({ content: `m${i}` })) })).statusCode,
      201,
    );
    assert.equal(await sessionCount(), before + 1);
  });

  it('answers 404 file_not_found naming messages.1 for an unknown file, without creating a session', async () => {
    const before = await sessionCount();
    const res = await run({
      messages: [{ content: 'fine' }, { content: [{ text: 'and' }, { type: 'file', file_id: 'fil_nope' }] }],
    });
    const error = assertError(res, 404, 'file_not_found');
    assert.equal(error.context?.file_id, 'fil_nope');
    assert.match(String(error.context?.param), /messages\.1\.content\.1\.file_id$/);
    assert.equal(await sessionCount(), before);
  });

  it('answers 404 agent_not_found and 404 user_not_found without creating a session', async () => {
    const before = await sessionCount();
    assertError(await run({ messages: [{ content: 'hi' }] }, 'nobody'), 404, 'agent_not_found');
    assertError(
      await run({ messages: [{ content: 'hi' }], user: { reference: 'nobody-here' } }),
      404,
      'user_not_found',
    );
    assert.equal(await sessionCount(), before);
  });

  it('answers 403 agent_forbidden to a key scoped to other agents, even for an unknown agent; 401 without a key', async () => {
    const scoped = client(t, await t.createKey('t1', ['other']));
    assertError(await run({ messages: [{ content: 'hi' }] }, 'demo', scoped), 403, 'agent_forbidden');
    assertError(await run({ messages: [{ content: 'hi' }] }, 'nobody', scoped), 403, 'agent_forbidden');
    assert.equal((await run({ messages: [{ content: 'hi' }] }, 'other', scoped)).statusCode, 201);
    const anonymous = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/demo/run',
      payload: { messages: [{ content: 'hi' }] },
    });
    assertError(anonymous, 401, 'unauthorized');
  });

  it('answers 502 agent_unavailable when the model fails, keeping the messages in the new session', async () => {
    const before = await sessionCount();
    assertError(await run({ messages: [{ content: 'run [[fail]]' }] }), 502, 'agent_unavailable');
    const list = (await api.get('/v1/agents/sessions?limit=1')).json();
    assert.equal(await sessionCount(), before + 1);
    const stored = await allMessages(t, list.items[0].id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m)]),
      [['user', 'run [[fail]]']],
    );
  });

  it('answers 504 agent_timeout when the model stalls', async () => {
    assertError(await run({ messages: [{ content: 'run [[stall]]' }] }, 'stally'), 504, 'agent_timeout');
  });

  it('answers 409 session_message_limit_reached for more messages than the agent allows, leaving no session', {}, async () => {
    const before = await sessionCount();
    const four = Array.from({ length: 4 }, (_, i) => ({ content: `m${i}` }));
    assertError(await run({ messages: four }, 'limited'), 409, 'session_message_limit_reached');
    assert.equal(await sessionCount(), before);
  });
});
