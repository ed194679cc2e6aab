// Session routes of the server-side family: create, read, list and terminate, every status each answers.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  assert422,
  assertError,
  client,
  createSession,
  createUser,
  getSession,
  type Session,
  useSessionApp,
} from '../../helpers/sessions.ts';

const t = useSessionApp();
const api = client(t);

describe('POST /v1/agents/{agent_id}/sessions', () => {
  it('creates a session and answers 201 with every Session field', async () => {
    const res = await api.post('/v1/agents/demo/sessions', {});
    assert.equal(res.statusCode, 201, res.body);
    const s = res.json();
    assert.match(s.id, /^ses_/);
    assert.equal(s.agent_id, 'demo');
    assert.equal(s.status, 'active');
    assert.ok(!Number.isNaN(Date.parse(s.created_at)));
    assert.ok(!Number.isNaN(Date.parse(s.updated_at)));
    assert.equal(s.user, null);
    assert.equal(s.messages_count, 0);
    assert.equal(s.last_message_at, null);
    assert.equal(s.closed_at, null);
    assert.deepEqual(s.context, {});
    assert.deepEqual(s.metadata, {});
    for (const hidden of ['tenant_id', 'shard', 'expires_at', 'snapshot']) assert.ok(!(hidden in s), hidden);
  });

  it('accepts no body at all and keeps the given context and metadata', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/demo/sessions',
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(res.statusCode, 201, res.body);
    const s = await createSession(t, 'demo', { context: { plan: 'pro' }, metadata: { crm: 7 } });
    assert.deepEqual(s.context, { plan: 'pro' });
    assert.deepEqual(s.metadata, { crm: 7 });
    const nulls = await createSession(t, 'demo', { user: null, context: null, metadata: null });
    assert.equal(nulls.user, null);
    assert.deepEqual([nulls.context, nulls.metadata], [{}, {}]);
  });

  it('binds a user given by id, by reference, or by both when they name the same user', async () => {
    const user = await createUser(t, { reference: 'sess-user-1', name: 'Ada' });
    for (const lookup of [
      { id: user.id },
      { reference: 'sess-user-1' },
      { id: user.id, reference: 'sess-user-1' },
    ]) {
      const s = await createSession(t, 'demo', { user: lookup });
      assert.deepEqual(s.user, { id: user.id, reference: 'sess-user-1' }, JSON.stringify(lookup));
    }
  });

  it('answers 422 at ["body","user"] when the id and the reference name different users', async () => {
    const a = await createUser(t, { reference: 'sess-user-a' });
    await createUser(t, { reference: 'sess-user-b' });
    const res = await api.post('/v1/agents/demo/sessions', { user: { id: a.id, reference: 'sess-user-b' } });
    assert422(res, ['body', 'user']);
  });

  it('answers 404 user_not_found for an unknown or soft-deleted user', async () => {
    assertError(
      await api.post('/v1/agents/demo/sessions', { user: { id: 'usr_nope' } }),
      404,
      'user_not_found',
    );
    assertError(
      await api.post('/v1/agents/demo/sessions', { user: { reference: 'no-such-ref' } }),
      404,
      'user_not_found',
    );
    const gone = await createUser(t, { reference: 'sess-deleted' });
    assert.equal((await api.delete(`/v1/agents/users/${gone.id}`)).statusCode, 204);
    assertError(await api.post('/v1/agents/demo/sessions', { user: { id: gone.id } }), 404, 'user_not_found');
    assertError(
      await api.post('/v1/agents/demo/sessions', { user: { reference: 'sess-deleted' } }),
      404,
      'user_not_found',
    );
  });

  it('answers 404 agent_not_found for an agent outside the catalogue', async () => {
    const error = assertError(await api.post('/v1/agents/nobody/sessions', {}), 404, 'agent_not_found');
    assert.equal(error.name, 'AgentNotFoundError');
  });

  it('answers 403 agent_forbidden to a key scoped to other agents, even for an unknown agent', async () => {
    const scoped = client(t, await t.createKey('t1', ['other']));
    assertError(await scoped.post('/v1/agents/demo/sessions', {}), 403, 'agent_forbidden');
    assertError(await scoped.post('/v1/agents/nobody/sessions', {}), 403, 'agent_forbidden');
    assert.equal((await scoped.post('/v1/agents/other/sessions', {})).statusCode, 201);
  });

  it('answers 401 without an API key', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/agents/demo/sessions', payload: {} });
    assertError(res, 401, 'unauthorized');
  });

  it('answers 422 for unknown fields, oversized context or metadata, and a context that is not an object', async () => {
    assert422(
      await api.post('/v1/agents/demo/sessions', { colour: 'red' }),
      ['body', 'colour'],
      'extra_forbidden',
    );
    assert422(
      await api.post('/v1/agents/demo/sessions', { context: { big: 'x'.repeat(17 * 1024) } }),
      ['body', 'context'],
      'too_large',
    );
    assert.equal(
      (await api.post('/v1/agents/demo/sessions', { context: { big: 'x'.repeat(15 * 1024) } })).statusCode,
      201,
    );
    assert422(
      await api.post('/v1/agents/demo/sessions', { metadata: { big: 'x'.repeat(9 * 1024) } }),
      ['body', 'metadata'],
      'too_large',
    );
    assert422(await api.post('/v1/agents/demo/sessions', { context: ['a'] }), ['body', 'context']);
    assert422(await api.post('/v1/agents/demo/sessions', { context: 'plan=pro' }), ['body', 'context']);
    assert422(await api.post('/v1/agents/demo/sessions', { user: {} }), ['body', 'user']);
  });
});

describe('GET /v1/agents/sessions/{session_id}', () => {
  it('reads a session back', async () => {
    const created = await createSession(t, 'demo', { context: { k: 'v' } });
    const res = await api.get(`/v1/agents/sessions/${created.id}`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), created);
  });

  it("answers 404 session_not_found for an unknown id and for another tenant's session", async () => {
    const created = await createSession(t);
    const other = client(t, await t.createKey('t-other'));
    for (const [c, id] of [
      [api, 'ses_nope'],
      [other, created.id],
    ] as const) {
      const error = assertError(await c.get(`/v1/agents/sessions/${id}`), 404, 'session_not_found');
      assert.equal(error.context?.session_id, id);
    }
  });

  it("answers 403 agent_forbidden to a key scoped away from the session's agent", async () => {
    const created = await createSession(t, 'demo');
    const scoped = client(t, await t.createKey('t1', ['other']));
    assertError(await scoped.get(`/v1/agents/sessions/${created.id}`), 403, 'agent_forbidden');
  });
});

describe('GET /v1/agents/sessions', () => {
  let key: string;
  let c: ReturnType<typeof client>;
  let made: Session[];
  let userId: string;

  before(async () => {
    key = await t.createKey('lister');
    c = client(t, key);
    userId = (await createUser(t, { reference: 'lister-user' }, key)).id;
    made = [];
    made.push(await createSession(t, 'demo', {}, key));
    made.push(await createSession(t, 'other', { user: { id: userId } }, key));
    made.push(await createSession(t, 'demo', { user: { id: userId } }, key));
    made.push(await createSession(t, 'other', {}, key));
    made.push(await createSession(t, 'demo', {}, key));
    const closing = await c.post(`/v1/agents/sessions/${made[0]?.id}/terminate`, {});
    assert.equal(closing.statusCode, 200);
  });

  const ids = (res: { json(): { items: Session[] } }) => res.json().items.map((s) => s.id);

  it('lists the tenant sessions newest first', async () => {
    const res = await c.get('/v1/agents/sessions');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(ids(res), made.map((s) => s.id).reverse());
    assert.equal(res.json().next_offset, null);
    assert.equal(res.json().items[4].status, 'closed');
  });

  it('filters by status, agent_id and user_id', async () => {
    assert.deepEqual(ids(await c.get('/v1/agents/sessions?status=closed')), [made[0]?.id]);
    assert.equal((await c.get('/v1/agents/sessions?status=active')).json().items.length, 4);
    assert.deepEqual(ids(await c.get('/v1/agents/sessions?status=expired')), []);
    assert.deepEqual(ids(await c.get('/v1/agents/sessions?agent_id=other')), [made[3]?.id, made[1]?.id]);
    assert.deepEqual(ids(await c.get(`/v1/agents/sessions?user_id=${userId}`)), [made[2]?.id, made[1]?.id]);
    assert.deepEqual(ids(await c.get(`/v1/agents/sessions?user_id=${userId}&agent_id=demo`)), [made[2]?.id]);
  });

  it('pages with limit and offset; next_offset is null on the last page, even a full one', async () => {
    const newest = made.map((s) => s.id).reverse();
    const p1 = await c.get('/v1/agents/sessions?limit=2');
    assert.deepEqual(ids(p1), newest.slice(0, 2));
    assert.equal(p1.json().next_offset, 2);
    const p2 = await c.get('/v1/agents/sessions?limit=2&offset=2');
    assert.deepEqual(ids(p2), newest.slice(2, 4));
    assert.equal(p2.json().next_offset, 4);
    const p3 = await c.get('/v1/agents/sessions?limit=2&offset=4');
    assert.deepEqual(ids(p3), newest.slice(4));
    assert.equal(p3.json().next_offset, null);
    const full = await c.get('/v1/agents/sessions?limit=5');
    assert.equal(full.json().items.length, 5);
    assert.equal(full.json().next_offset, null);
    assert.deepEqual(ids(await c.get('/v1/agents/sessions?offset=50')), []);
  });

  it("shows a scoped key only its agents' sessions", async () => {
    const scoped = client(t, await t.createKey('lister', ['other']));
    assert.deepEqual(ids(await scoped.get('/v1/agents/sessions')), [made[3]?.id, made[1]?.id]);
    assert.deepEqual(ids(await scoped.get('/v1/agents/sessions?agent_id=demo')), []);
  });

  it('answers 422 for limit 0 or 101, offset -1 and an unknown status', async () => {
    assert422(await c.get('/v1/agents/sessions?limit=0'), ['query', 'limit'], 'greater_than_equal');
    assert422(await c.get('/v1/agents/sessions?limit=101'), ['query', 'limit'], 'less_than_equal');
    assert422(await c.get('/v1/agents/sessions?offset=-1'), ['query', 'offset'], 'greater_than_equal');
    assert422(await c.get('/v1/agents/sessions?status=open'), ['query', 'status']);
  });
});

describe('POST /v1/agents/sessions/{session_id}/terminate', () => {
  it('closes the session and answers 200 with id, status, closed_at and reason', async () => {
    const s = await createSession(t);
    const res = await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'resolved' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['closed_at', 'id', 'reason', 'status']);
    assert.equal(body.id, s.id);
    assert.equal(body.status, 'closed');
    assert.equal(body.reason, 'resolved');
    assert.ok(!Number.isNaN(Date.parse(body.closed_at)));
    const read = await getSession(t, s.id);
    assert.equal(read.status, 'closed');
    assert.equal(read.closed_at, body.closed_at);
  });

  it('is idempotent: a second call answers 200 with the original closed_at and reason', async () => {
    const s = await createSession(t);
    const first = await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'first' });
    await new Promise((r) => setTimeout(r, 5));
    const second = await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'second' });
    assert.equal(second.statusCode, 200);
    assert.deepEqual(second.json(), first.json());
    assert.equal(second.json().reason, 'first');
  });

  it('accepts no body, which leaves the reason null', async () => {
    const s = await createSession(t);
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/agents/sessions/${s.id}/terminate`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().reason, null);
  });

  it('answers 422 for a reason over 500 characters and leaves the session active', async () => {
    const s = await createSession(t);
    assert422(
      await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'r'.repeat(501) }),
      ['body', 'reason'],
      'string_too_long',
    );
    assert.equal((await getSession(t, s.id)).status, 'active');
    const ok = await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'r'.repeat(500) });
    assert.equal(ok.statusCode, 200);
  });

  it("answers 404 session_not_found for an unknown id and for another tenant's session", async () => {
    const s = await createSession(t);
    assertError(await api.post('/v1/agents/sessions/ses_nope/terminate', {}), 404, 'session_not_found');
    const other = client(t, await t.createKey('t-other2'));
    assertError(await other.post(`/v1/agents/sessions/${s.id}/terminate`, {}), 404, 'session_not_found');
    assert.equal((await getSession(t, s.id)).status, 'active');
  });

  it("answers 403 agent_forbidden to a key scoped away from the session's agent", async () => {
    const s = await createSession(t);
    const scoped = client(t, await t.createKey('t1', ['other']));
    assertError(await scoped.post(`/v1/agents/sessions/${s.id}/terminate`, {}), 403, 'agent_forbidden');
    assert.equal((await getSession(t, s.id)).status, 'active');
  });
});
