// Text holding U+0000 is refused with 422 `string_nul` at its location on every entry point of both families
// (docs/internals/decisions.md#no-nul-in-text), on SQLite, which could store it, as on PostgreSQL, which
// cannot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openConversation } from '../../helpers/conversations.ts';
import { encodeForm, fileForm } from '../../helpers/multipart.ts';
import {
  assert422,
  client,
  createSession,
  createUser,
  getSession,
  useSessionApp,
} from '../../helpers/sessions.ts';

const NUL = '\u0000';
const t = useSessionApp({ env: { PARLEY_TOKEN_SECRET: 'test-secret-for-nul-text-0123456789abcdef' } });
const api = client(t);
const patch = (url: string, payload: unknown) =>
  t.app.inject({ method: 'PATCH', url, headers: { 'x-api-key': t.apiKey }, payload: payload as object });

describe('U+0000 in the server-side family', () => {
  it('refuses a user name, reference, email or phone holding U+0000 and creates no user', async () => {
    for (const field of ['name', 'reference', 'email', 'phone']) {
      const res = await api.post('/v1/agents/users', { [field]: `a${NUL}b` });
      assert422(res, ['body', field], 'string_nul');
    }
    const list = await api.get('/v1/agents/users?limit=100');
    assert.equal(list.json().items.length, 0, list.body);
  });

  it('refuses U+0000 in a metadata or info key or nested value, pointing at the key or the value', async () => {
    const res = await api.post('/v1/agents/users', {
      metadata: { [`k${NUL}`]: 1, ok: { deeper: ['x', `y${NUL}`] } },
      info: { note: NUL },
    });
    assert422(res, ['body', 'metadata', `k${NUL}`], 'string_nul');
    assert422(res, ['body', 'metadata', 'ok', 'deeper', 1], 'string_nul');
    assert422(res, ['body', 'info', 'note'], 'string_nul');
    assert.equal(res.json().detail.length, 3, res.body);
  });

  it('refuses a user patch whose name or metadata key holds U+0000 and leaves the user as it was', async () => {
    const user = await createUser(t, { name: 'Ada' });
    assert422(
      await patch(`/v1/agents/users/${user.id}`, { name: `A${NUL}` }),
      ['body', 'name'],
      'string_nul',
    );
    const meta = await patch(`/v1/agents/users/${user.id}`, { metadata: { [NUL]: 'x' } });
    assert422(meta, ['body', 'metadata', NUL], 'string_nul');
    const read = await api.get(`/v1/agents/users/${user.id}`);
    assert.equal(read.json().name, 'Ada');
    assert.deepEqual(read.json().metadata, {});
  });

  it('refuses U+0000 in a query parameter or a path id rather than looking it up', async () => {
    assert422(await api.get(`/v1/agents/users?reference=a%00`), ['query', 'reference'], 'string_nul');
    assert422(await api.get('/v1/agents/files?name=%00'), ['query', 'name'], 'string_nul');
    assert422(await api.get('/v1/agents/users/usr_%00'), ['path', 'user_id'], 'string_nul');
  });

  it('refuses a session whose context, metadata or user reference holds U+0000', async () => {
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ context: { page: { title: `x${NUL}` } } }, ['body', 'context', 'page', 'title']],
      [{ metadata: { tags: [NUL] } }, ['body', 'metadata', 'tags', 0]],
      [{ user: { reference: `r${NUL}` } }, ['body', 'user', 'reference']],
    ];
    for (const [body, loc] of cases) {
      assert422(await api.post('/v1/agents/demo/sessions', body), loc, 'string_nul');
      assert422(await api.post('/v1/agents/demo/conversations', body), loc, 'string_nul');
    }
  });

  it('refuses a message whose text, text block or metadata holds U+0000 and stores no message', async () => {
    const session = await createSession(t);
    const url = `/v1/agents/sessions/${session.id}/messages`;
    assert422(await api.post(url, { content: `hi${NUL}` }), ['body', 'content'], 'string_nul');
    const blocks = { content: [{ type: 'text', text: 'fine' }, { text: `x${NUL}y` }] };
    assert422(await api.post(url, blocks), ['body', 'content', 1, 'text'], 'string_nul');
    assert422(
      await api.post(url, { content: 'hi', metadata: { a: NUL } }),
      ['body', 'metadata', 'a'],
      'string_nul',
    );
    assert422(await api.post(url, { content: `hi${NUL}` }, { accept: 'text/event-stream' }), [
      'body',
      'content',
    ]);
    assert.equal((await getSession(t, session.id)).messages_count, 0);
  });

  it('refuses a terminate reason holding U+0000 and leaves the session active', async () => {
    const session = await createSession(t);
    const res = await api.post(`/v1/agents/sessions/${session.id}/terminate`, { reason: `done${NUL}` });
    assert422(res, ['body', 'reason'], 'string_nul');
    assert.equal((await getSession(t, session.id)).status, 'active');
  });

  it('refuses U+0000 in an upload metadata part, as text or declared JSON, and stores no file', async () => {
    const asText = await encodeForm(fileForm('hello', 'a.txt', 'text/plain', '{"a":"x\\u0000"}'));
    const declared = fileForm('hello', 'a.txt', 'text/plain');
    declared.append('metadata', new Blob(['{"b":{"\\u0000":1}}'], { type: 'application/json' }));
    const blob = await encodeForm(declared);
    // A Blob part is sent with a filename; re-encode it as a field with a JSON content type.
    const asField = blob.payload
      .toString('latin1')
      .replace(/name="metadata"; filename="blob"/, 'name="metadata"');
    const asJson = { contentType: blob.contentType, payload: Buffer.from(asField, 'latin1') };
    for (const [form, loc] of [
      [asText, ['body', 'metadata', 'a']],
      [asJson, ['body', 'metadata', 'b', NUL]],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/agents/files',
        headers: { 'x-api-key': t.apiKey, 'content-type': form.contentType },
        payload: form.payload,
      });
      assert422(res, [...loc], 'string_nul');
    }
    assert.equal((await api.get('/v1/agents/files')).json().items.length, 0);
  });
});

describe('U+0000 in the public family', () => {
  it('refuses a feedback comment or metadata holding U+0000', async () => {
    const c = await openConversation(t);
    assert422(
      await c.pub.post('/feedback', { score: 7, comment: `ok${NUL}` }),
      ['body', 'comment'],
      'string_nul',
    );
    const meta = await c.pub.post('/feedback', { score: 7, metadata: { [`k${NUL}`]: 1 } });
    assert422(meta, ['body', 'metadata', `k${NUL}`], 'string_nul');
  });

  it('refuses a message or terminate reason holding U+0000 and leaves the conversation open and empty', async () => {
    const c = await openConversation(t);
    assert422(await c.pub.post('/messages', { content: `hi${NUL}` }), ['body', 'content'], 'string_nul');
    assert422(await c.pub.post('/terminate', { reason: NUL }), ['body', 'reason'], 'string_nul');
    const read = await c.pub.get();
    assert.equal(read.json().status, 'active', read.body);
    assert.equal(read.json().messages_count, 0, read.body);
  });
});
