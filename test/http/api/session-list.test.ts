// GET /v1/agents/sessions for an operator console, on SQLite and PostgreSQL: cursor paging (stable while
// sessions are created, beside the offset), the filters handled_by, pending_approval, user_reference and
// updated_after, 422 for values it cannot read, and each Session's feedback.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { call, perStore, postgresMissing, turnsOf } from '../../helpers/approvals.ts';
import { publicClient, startConversation } from '../../helpers/conversations.ts';
import { assert422, client, createSession, createUser } from '../../helpers/sessions.ts';

const pgMissing = await postgresMissing();

type Page = {
  items: { id: string; feedback: unknown }[];
  next_offset: number | null;
  next_cursor: string | null;
};

perStore('the session list of an operator console', pgMissing, (t) => {
  /** A key of a fresh tenant, so that each test lists only its own sessions. */
  const freshKey = () => t.createKey(`t-${Math.random().toString(36).slice(2, 10)}`);
  const list = async (key: string, query: string): Promise<Page> => {
    const res = await client(t, key).get(`/v1/agents/sessions?${query}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const ids = (page: Page) => page.items.map((s) => s.id);

  it('pages by cursor, newest first, and sessions created meanwhile neither repeat nor shift a page', async () => {
    const key = await freshKey();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.unshift((await createSession(t, 'shop', {}, key)).id);
    const first = await list(key, 'limit=2');
    assert.deepEqual(ids(first), made.slice(0, 2));
    assert.equal(first.next_offset, 2, 'the offset keeps working');
    assert.ok(first.next_cursor);
    const newer = await createSession(t, 'shop', {}, key);
    const second = await list(key, `limit=2&cursor=${first.next_cursor}`);
    assert.deepEqual(ids(second), made.slice(2, 4));
    assert.equal(second.next_offset, null);
    const third = await list(key, `limit=2&cursor=${second.next_cursor}`);
    assert.deepEqual(ids(third), made.slice(4));
    assert.equal(third.next_cursor, null);
    assert.deepEqual(ids(await list(key, 'limit=1')), [newer.id], 'a fresh first page shows the newer one');
    assert.deepEqual(ids(await list(key, 'limit=2&offset=2')), [made[1], made[2]]);
  });

  it('filters by who handles the session, a waiting approval, the user reference and the last change', async () => {
    const key = await freshKey();
    const user = await createUser(t, { reference: 'crm-42' }, key);
    const plain = await createSession(t, 'shop', {}, key);
    const handed = await createSession(t, 'desk', {}, key);
    const paused = await createSession(t, 'shop', { user: { reference: 'crm-42' } }, key);
    assert.equal((await client(t, key).post(`/v1/agents/sessions/${handed.id}/handoff`, {})).statusCode, 200);
    const res = await turnsOf(t, paused.id, key).send(call('refund', 'order 7'));
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(ids(await list(key, 'handled_by=humans')), [handed.id]);
    assert.deepEqual(ids(await list(key, 'handled_by=agent')), [paused.id, plain.id]);
    assert.deepEqual(ids(await list(key, 'pending_approval=true')), [paused.id]);
    assert.deepEqual(ids(await list(key, 'pending_approval=false')), [handed.id, plain.id]);
    assert.deepEqual(ids(await list(key, `user_reference=${user.reference}`)), [paused.id]);
    assert.deepEqual(ids(await list(key, 'user_reference=crm-0')), []);
    const pausedAt = (await client(t, key).get(`/v1/agents/sessions/${paused.id}`)).json().updated_at;
    const before = new Date(Date.parse(pausedAt) - 1).toISOString();
    assert.ok(ids(await list(key, `updated_after=${before}`)).includes(paused.id));
    assert.deepEqual(ids(await list(key, `updated_after=${encodeURIComponent(pausedAt)}`)), []);
    assert.deepEqual(ids(await list(key, 'handled_by=agent&pending_approval=true')), [paused.id]);
  });

  it('answers 422 at the parameter for a value it cannot read, and for a cursor with an offset', async () => {
    const key = await freshKey();
    await createSession(t, 'shop', {}, key);
    const cursor = (await list(key, 'limit=1')).next_cursor;
    const get = (query: string) => client(t, key).get(`/v1/agents/sessions?${query}`);
    assert422(await get('handled_by=robots'), ['query', 'handled_by'], 'enum');
    assert422(await get('pending_approval=yes'), ['query', 'pending_approval'], 'enum');
    assert422(await get('updated_after=yesterday'), ['query', 'updated_after'], 'datetime_parsing');
    assert422(await get('cursor=not-a-cursor'), ['query', 'cursor'], 'value_error');
    assert422(await get(`cursor=${Buffer.from('["x",1]').toString('base64url')}`), ['query', 'cursor']);
    assert.equal(cursor, null, 'one session: no next page');
    const two = await createSession(t, 'shop', {}, key);
    const page = await list(key, 'limit=1');
    assert.deepEqual(ids(page), [two.id]);
    assert422(await get(`cursor=${page.next_cursor}&offset=1`), ['query', 'offset'], 'value_error');
  });

  it("shows the conversation's feedback on the Session when read and listed, null without", async () => {
    const key = await freshKey();
    const quiet = await createSession(t, 'shop', {}, key);
    assert.equal(quiet.feedback, null);
    const started = await startConversation(t, 'shop', {}, key);
    const pub = publicClient(t, started.conversation.id, started.session_token);
    const sent = await pub.post('/feedback', { score: 9, comment: 'Quick and clear' });
    assert.equal(sent.statusCode, 200, sent.body);
    const page = await list(key, '');
    assert.deepEqual(
      page.items.map((s) => s.feedback),
      [sent.json(), null],
    );
    const read = await client(t, key).get(`/v1/agents/sessions/${page.items[0]?.id}`);
    assert.deepEqual(read.json().feedback, sent.json());
    assert.deepEqual(Object.keys(sent.json()).sort(), ['comment', 'id', 'score', 'submitted_at']);
  });
});
