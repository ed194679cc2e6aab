// Webhook endpoints (docs/internals/decisions.md#webhooks) through the API, and the events a real receiver
// gets for what happens in the service: every event type, signed; in order per session; retried past a
// receiver that fails twice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WEBHOOK_EVENT_TYPES } from '../../../src/store/store.ts';
import { openConversation } from '../../helpers/conversations.ts';
import {
  assert422,
  assertError,
  client,
  createSession,
  createUser,
  send,
  turn,
  useSessionApp,
} from '../../helpers/sessions.ts';
import { waitFor } from '../../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const ALL_EVENTS = [...WEBHOOK_EVENT_TYPES];

// Retries 50 ms apart, so that a receiver failing twice is done with at once; a sweep every second expires
// sessions of the `short` agent (a second of life) soon after.
const t = useSessionApp({
  env: { PARLEY_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms', PARLEY_SWEEP_SECONDS: '1' },
});
let receiver: WebhookReceiver;
before(async () => {
  receiver = await startWebhookReceiver();
});
after(() => receiver.close());

async function register(body: Record<string, unknown>, key?: string) {
  const res = await client(t, key).post('/v1/agents/webhooks', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { id: string; url: string; events: string[]; secret: string; created_at: string };
}

/** The deliveries of `type` about `key` (a session or user id) that the receiver has got so far. */
const about = (type: string, key: string) =>
  receiver.requests.filter(
    (d) => d.body?.type === type && (d.body?.data.session_id === key || d.body?.data.id === key),
  );

async function delivered(type: string, key: string) {
  await waitFor(`a ${type} delivery about ${key}`, () => about(type, key).some((d) => d.status === 200));
  const hit = about(type, key).find((d) => d.status === 200);
  assert.ok(hit?.body);
  return { ...hit, body: hit.body };
}

describe('managing webhook endpoints', () => {
  it('registers an endpoint with a generated whsec_ secret shown once, then lists, reads and deletes it', async () => {
    const created = await register({ url: 'https://crm.example.com/hooks', events: ['session.closed'] });
    assert.match(created.id, /^wh_/);
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.equal(Buffer.from(created.secret.slice('whsec_'.length), 'base64').length, 32);
    assert.deepEqual(created.events, ['session.closed']);

    const listed = await client(t).get('/v1/agents/webhooks');
    assert.equal(listed.statusCode, 200);
    const mine = listed.json().items.find((w: { id: string }) => w.id === created.id);
    assert.deepEqual(mine, {
      id: created.id,
      url: created.url,
      events: created.events,
      created_at: created.created_at,
    });
    const read = await client(t).get(`/v1/agents/webhooks/${created.id}`);
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().secret, undefined);

    assert.equal((await client(t).delete(`/v1/agents/webhooks/${created.id}`)).statusCode, 204);
    assertError(await client(t).get(`/v1/agents/webhooks/${created.id}`), 404, 'webhook_not_found');
    assertError(await client(t).delete(`/v1/agents/webhooks/${created.id}`), 404, 'webhook_not_found');
    assertError(
      await client(t).get(`/v1/agents/webhooks/${created.id}/deliveries`),
      404,
      'webhook_not_found',
    );
  });

  it('keeps a given secret, and refuses one that is not whsec_ and base64', async () => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    const created = await register({ url: 'https://crm.example.com/a', events: ['user.deleted'], secret });
    assert.equal(created.secret, secret);
    const res = await client(t).post('/v1/agents/webhooks', {
      url: 'https://crm.example.com/a',
      events: ['user.deleted'],
      secret: 'hunter2',
    });
    assert422(res, ['body', 'secret']);
    await client(t).delete(`/v1/agents/webhooks/${created.id}`);
  });

  it('answers 422 for a URL that is not http(s), no events, an unknown event or one named twice', async () => {
    const post = (body: unknown) => client(t).post('/v1/agents/webhooks', body);
    assert422(await post({ url: 'ftp://crm.example.com/', events: ['session.closed'] }), ['body', 'url']);
    assert422(await post({ url: 'not a url', events: ['session.closed'] }), ['body', 'url']);
    assert422(await post({ url: 'https://crm.example.com/', events: [] }), ['body', 'events']);
    assert422(await post({ url: 'https://crm.example.com/', events: ['session.opened'] }), [
      'body',
      'events',
      0,
    ]);
    assert422(await post({ url: 'https://crm.example.com/', events: ['session.closed', 'session.closed'] }), [
      'body',
      'events',
    ]);
    assert422(await post({ url: 'https://crm.example.com/', events: ['session.closed'], extra: 1 }), [
      'body',
      'extra',
    ]);
  });

  it("answers 403 to a key scoped to some agents, and 404 for another tenant's endpoint", async () => {
    const scoped = await t.createKey('t1', ['demo']);
    assertError(
      await client(t, scoped).post('/v1/agents/webhooks', {
        url: 'https://x.example.com/',
        events: ['user.deleted'],
      }),
      403,
      'forbidden',
    );
    assertError(await client(t, scoped).get('/v1/agents/webhooks'), 403, 'forbidden');
    const created = await register({ url: 'https://crm.example.com/b', events: ['user.deleted'] });
    const stranger = await t.createKey('t2');
    assertError(await client(t, stranger).get(`/v1/agents/webhooks/${created.id}`), 404, 'webhook_not_found');
    assertError(
      await client(t, stranger).delete(`/v1/agents/webhooks/${created.id}`),
      404,
      'webhook_not_found',
    );
    assert.equal((await client(t, stranger).get('/v1/agents/webhooks')).json().items.length, 0);
    await client(t).delete(`/v1/agents/webhooks/${created.id}`);
  });
});

describe('the endpoint cap', () => {
  it('registrations made at once stop at 20 endpoints a tenant: the rest answer 409 webhook_limit_reached', async () => {
    const key = await t.createKey('t-cap');
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        client(t, key).post('/v1/agents/webhooks', {
          url: `https://crm.example.com/cap/${n}`,
          events: ['session.closed'],
        }),
      ),
    );
    const statuses = answers.map((res) => res.statusCode).sort();
    assert.deepEqual(statuses, [...Array(20).fill(201), ...Array(10).fill(409)]);
    for (const res of answers.filter((r) => r.statusCode === 409)) {
      assertError(res, 409, 'webhook_limit_reached');
    }
    assert.equal((await client(t, key).get('/v1/agents/webhooks')).json().items.length, 20);
  });
});

describe('refusing private addresses', () => {
  const strict = useSessionApp({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'false' } });

  it('refuses loopback and private URLs with 422 url_private unless allowed', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://10.1.2.3/x', 'http://[::1]/x']) {
      const res = await client(strict).post('/v1/agents/webhooks', { url, events: ['session.closed'] });
      assert422(res, ['body', 'url'], 'url_private');
    }
  });
});

describe('events delivered to a receiver', () => {
  let hook: { id: string; secret: string };
  before(async () => {
    hook = await register({ url: receiver.url, events: ALL_EVENTS });
  });

  it('a terminate is delivered as session.closed, signed, with the Session record and its reason', async () => {
    const session = await createSession(t);
    const res = await client(t).post(`/v1/agents/sessions/${session.id}/terminate`, { reason: 'resolved' });
    assert.equal(res.statusCode, 200, res.body);
    const delivery = await delivered('session.closed', session.id);
    const payload = receiver.verify(delivery, hook.secret);
    assert.equal(payload.type, 'session.closed');
    assert.ok(!Number.isNaN(Date.parse(payload.timestamp)));
    assert.equal(payload.data.id, session.id);
    assert.equal(payload.data.status, 'closed');
    assert.equal(payload.data.reason, 'resolved');
    assert.equal(payload.data.close_reason, 'resolved');
    assert.equal(payload.data.closed_at, res.json().closed_at);
    assert.equal(payload.data.tenant_id, undefined, 'only what the Session resource shows');
    assert.match(String(delivery.headers['webhook-id']), /^evt_/);
    assert.match(String(delivery.headers['user-agent']), /^Parley-Webhooks\//);
    assert.throws(() => receiver.verify(delivery, `whsec_${Buffer.alloc(32).toString('base64')}`));
  });

  it('a reply is turn.completed and a failed turn turn.failed, before the session.closed that follows', async () => {
    const session = await createSession(t, 'stally');
    const reply = await turn(t, session.id, 'hello');
    const failed = await send(t, session.id, { content: '[[stall]]' });
    assert.equal(failed.statusCode, 504, failed.body);
    await client(t).post(`/v1/agents/sessions/${session.id}/terminate`, {});
    await delivered('session.closed', session.id);

    const types = receiver.requests
      .filter((d) => d.status === 200 && (d.body?.data.session_id ?? d.body?.data.id) === session.id)
      .map((d) => d.body?.type);
    // Every stored message is message.created too, in the order of the commits that stored them.
    assert.deepEqual(types, [
      'message.created',
      'message.created',
      'turn.completed',
      'message.created',
      'turn.failed',
      'session.closed',
    ]);
    const completed = await delivered('turn.completed', session.id);
    assert.deepEqual(completed.body.data.message, reply);
    assert.equal(completed.body.data.agent_id, 'stally');
    const failure = await delivered('turn.failed', session.id);
    assert.equal((failure.body.data.error as { code: string }).code, 'agent_timeout');
  });

  it('feedback, a deleted user and an expired session are delivered as their events', async () => {
    const conversation = await openConversation(t);
    const feedback = await conversation.pub.post('/feedback', { score: 9, comment: 'great' });
    assert.equal(feedback.statusCode, 200, feedback.body);
    const got = await delivered('feedback.submitted', conversation.id);
    assert.deepEqual(got.body.data.feedback, { ...feedback.json(), metadata: {} });

    const user = await createUser(t);
    assert.equal((await client(t).delete(`/v1/agents/users/${user.id}`)).statusCode, 204);
    assert.equal((await delivered('user.deleted', user.id)).body.data.id, user.id);

    const short = await createSession(t, 'short');
    // Its second of life passes; the sweep (every second here) expires it.
    const expired = await delivered('session.expired', short.id);
    assert.equal(expired.body.data.status, 'expired');
    assert.equal(expired.body.data.reason, 'ttl');
  });

  it('a receiver that fails twice gets the event a third time, under the same webhook-id, listed as delivered', async () => {
    receiver.script(500, 503);
    const session = await createSession(t);
    await client(t).post(`/v1/agents/sessions/${session.id}/terminate`, {});
    const ok = await delivered('session.closed', session.id);
    const attempts = about('session.closed', session.id);
    assert.deepEqual(
      attempts.map((d) => d.status),
      [500, 503, 200],
    );
    assert.equal(new Set(attempts.map((d) => d.headers['webhook-id'])).size, 1);

    const res = await client(t).get(`/v1/agents/webhooks/${hook.id}/deliveries?limit=100`);
    assert.equal(res.statusCode, 200);
    const listed = res
      .json()
      .items.find((d: { event_id: string }) => d.event_id === ok.headers['webhook-id']);
    assert.equal(listed.type, 'session.closed');
    assert.equal(listed.status, 'delivered');
    assert.equal(listed.attempts, 3);
    assert.equal(listed.last_status_code, 200);
    assert.equal(listed.next_attempt_at, null);
  });

  it('an endpoint hears only of the events it subscribed to', async () => {
    const narrow = await startWebhookReceiver();
    try {
      await register({ url: narrow.url, events: ['user.deleted'] });
      const session = await createSession(t);
      await client(t).post(`/v1/agents/sessions/${session.id}/terminate`, {});
      const user = await createUser(t);
      await client(t).delete(`/v1/agents/users/${user.id}`);
      await waitFor('the user.deleted delivery', () => narrow.requests.length > 0);
      await delivered('session.closed', session.id);
      assert.deepEqual(
        narrow.requests.map((d) => d.body?.type),
        ['user.deleted'],
      );
    } finally {
      await narrow.close();
    }
  });
});
