// End-user routes of the server-side family: every status each route can answer, through app.inject.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useTestApp } from '../../helpers/app.ts';

const t = useTestApp();
const headers = () => ({ 'x-api-key': t.apiKey });

async function createUser(body: Record<string, unknown> = {}, key = t.apiKey) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/users',
    headers: { 'x-api-key': key },
    payload: body,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

describe('POST /v1/agents/users', () => {
  it('creates a user with every field and answers 201 with the User', async () => {
    const user = await createUser({
      reference: 'crm:42.a_b-c',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '+44 20 7946 0000',
      metadata: { plan: 'pro' },
      info: { language: 'en' },
    });
    assert.match(user.id, /^usr_/);
    assert.equal(user.reference, 'crm:42.a_b-c');
    assert.equal(user.name, 'Ada Lovelace');
    assert.equal(user.email, 'ada@example.com');
    assert.equal(user.phone, '+44 20 7946 0000');
    assert.deepEqual(user.metadata, { plan: 'pro' });
    assert.deepEqual(user.info, { language: 'en' });
    assert.equal(user.created_at, user.updated_at);
    assert.ok(!Number.isNaN(Date.parse(user.created_at)));
  });

  it('accepts an empty body and no body at all', async () => {
    const empty = await createUser({});
    assert.equal(empty.reference, null);
    assert.deepEqual(empty.metadata, {});
    const res = await t.app.inject({ method: 'POST', url: '/v1/agents/users', headers: headers() });
    assert.equal(res.statusCode, 201);
  });

  it('answers 409 user_reference_conflict when the reference is taken in the tenant', async () => {
    await createUser({ reference: 'dup-1' });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: headers(),
      payload: { reference: 'dup-1' },
    });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().error.code, 'user_reference_conflict');
    assert.equal(res.json().error.name, 'UserReferenceConflictError');
  });

  it('lets another tenant use the same reference', async () => {
    await createUser({ reference: 'shared-ref' });
    const other = await t.createKey('t2');
    const user = await createUser({ reference: 'shared-ref' }, other);
    assert.equal(user.reference, 'shared-ref');
  });

  it('answers 422 for a reference outside the pattern or over 128 characters', async () => {
    for (const [reference, type] of [
      ['has space', 'string_pattern_mismatch'],
      ['back\\slash', 'string_pattern_mismatch'],
      ['x'.repeat(129), 'string_too_long'],
      ['', 'string_too_short'],
    ]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/agents/users',
        headers: headers(),
        payload: { reference },
      });
      assert.equal(res.statusCode, 422, reference);
      assert.deepEqual(res.json().detail[0].loc, ['body', 'reference']);
      assert.equal(res.json().detail[0].type, type);
    }
  });

  it('answers 422 for an invalid email, an over-long name or phone, and unknown fields', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: headers(),
      payload: { email: 'not-an-email', name: 'n'.repeat(201), phone: '1'.repeat(33), nickname: 'x' },
    });
    assert.equal(res.statusCode, 422);
    const byLoc = Object.fromEntries(
      res.json().detail.map((d: { loc: string[]; type: string }) => [d.loc.join('.'), d.type]),
    );
    assert.equal(byLoc['body.email'], 'value_error');
    assert.equal(byLoc['body.name'], 'string_too_long');
    assert.equal(byLoc['body.phone'], 'string_too_long');
    assert.equal(byLoc['body.nickname'], 'extra_forbidden');
  });

  it('answers 422 when metadata or info is over 8 KiB, nested deeper than 32 levels, or not an object', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 33; i++) deep = { d: deep };
    const cases: [Record<string, unknown>, string[], string][] = [
      [{ metadata: { big: 'x'.repeat(9000) } }, ['body', 'metadata'], 'too_large'],
      [{ info: { big: 'x'.repeat(9000) } }, ['body', 'info'], 'too_large'],
      [{ metadata: deep }, ['body', 'metadata'], 'too_deep'],
      [{ metadata: [1, 2] }, ['body', 'metadata'], 'dict_type'],
    ];
    for (const [payload, loc, type] of cases) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/agents/users',
        headers: headers(),
        payload,
      });
      assert.equal(res.statusCode, 422, JSON.stringify(loc));
      assert.deepEqual(res.json().detail[0].loc, loc);
      assert.equal(res.json().detail[0].type, type);
    }
  });

  it('refuses a name or phone holding a lone surrogate, which could not be stored as it was sent', async () => {
    for (const field of ['name', 'phone']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/agents/users',
        headers: { ...headers(), 'content-type': 'application/json' },
        payload: `{"${field}":"a\\udc00b"}`,
      });
      assert.equal(res.statusCode, 422, field);
      assert.deepEqual(res.json().detail[0].loc, ['body', field]);
      assert.equal(res.json().detail[0].type, 'string_unicode');
    }
    const emoji = await createUser({ name: 'Zoë 👩‍👩‍👧' });
    assert.equal(emoji.name, 'Zoë 👩‍👩‍👧');
  });

  it('answers a multipart body with 415, since only upload routes take multipart', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: { ...headers(), 'content-type': 'multipart/form-data; boundary=abc' },
      payload: '--abc\r\nContent-Disposition: form-data; name="name"\r\n\r\nAda\r\n--abc--\r\n',
    });
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().error.code, 'unsupported_media_type');
  });

  it('accepts metadata nested exactly 32 levels deep', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 31; i++) deep = { d: deep };
    const user = await createUser({ metadata: deep });
    assert.deepEqual(user.metadata, deep);
  });
});

describe('GET /v1/agents/users/{user_id}', () => {
  it('reads a user back', async () => {
    const created = await createUser({ name: 'Read Me' });
    const res = await t.app.inject({ url: `/v1/agents/users/${created.id}`, headers: headers() });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), created);
  });

  it("answers 404 user_not_found for an unknown id and for another tenant's user", async () => {
    const created = await createUser();
    const other = await t.createKey('t3');
    for (const [id, key] of [
      ['usr_nope', t.apiKey],
      [created.id, other],
    ]) {
      const res = await t.app.inject({ url: `/v1/agents/users/${id}`, headers: { 'x-api-key': key } });
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().error.code, 'user_not_found');
      assert.equal(res.json().error.context.user_id, id);
    }
  });
});

describe('GET /v1/agents/users', () => {
  it('lists newest first with paging; next_offset is null on the last page even when it is full', async () => {
    const key = await t.createKey('paging');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await createUser({}, key)).id);
    const page1 = await t.app.inject({ url: '/v1/agents/users?limit=2', headers: { 'x-api-key': key } });
    assert.equal(page1.statusCode, 200);
    assert.deepEqual(
      page1.json().items.map((u: { id: string }) => u.id),
      [ids[3], ids[2]],
    );
    assert.equal(page1.json().next_offset, 2);
    const page2 = await t.app.inject({
      url: '/v1/agents/users?limit=2&offset=2',
      headers: { 'x-api-key': key },
    });
    assert.deepEqual(
      page2.json().items.map((u: { id: string }) => u.id),
      [ids[1], ids[0]],
    );
    assert.equal(page2.json().next_offset, null);
  });

  it('filters by reference and by email, case-insensitively for email', async () => {
    const key = await t.createKey('filters');
    const a = await createUser({ reference: 'f-a', email: 'Mixed.Case@Example.com' }, key);
    await createUser({ reference: 'f-b', email: 'other@example.com' }, key);
    const byRef = await t.app.inject({
      url: '/v1/agents/users?reference=f-a',
      headers: { 'x-api-key': key },
    });
    assert.deepEqual(
      byRef.json().items.map((u: { id: string }) => u.id),
      [a.id],
    );
    const byEmail = await t.app.inject({
      url: '/v1/agents/users?email=mixed.case%40example.com',
      headers: { 'x-api-key': key },
    });
    assert.deepEqual(
      byEmail.json().items.map((u: { id: string }) => u.id),
      [a.id],
    );
  });

  it('answers 422 for limits outside 1-100 and a negative offset', async () => {
    for (const [query, loc, type] of [
      ['limit=0', 'limit', 'greater_than_equal'],
      ['limit=101', 'limit', 'less_than_equal'],
      ['limit=abc', 'limit', 'int_parsing'],
      ['offset=-1', 'offset', 'greater_than_equal'],
    ]) {
      const res = await t.app.inject({ url: `/v1/agents/users?${query}`, headers: headers() });
      assert.equal(res.statusCode, 422, query);
      assert.deepEqual(res.json().detail[0].loc, ['query', loc]);
      assert.equal(res.json().detail[0].type, type);
    }
  });
});

describe('PATCH /v1/agents/users/{user_id}', () => {
  it('replaces only the given fields; null clears a field and resets metadata to {}', async () => {
    const user = await createUser({
      reference: 'p-1',
      name: 'Before',
      email: 'b@example.com',
      metadata: { a: 1 },
    });
    await new Promise((r) => setTimeout(r, 5));
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
      payload: { name: 'After', email: null, metadata: null, info: { tier: 'gold' } },
    });
    assert.equal(res.statusCode, 200);
    const patched = res.json();
    assert.equal(patched.name, 'After');
    assert.equal(patched.email, null);
    assert.equal(patched.reference, 'p-1');
    assert.deepEqual(patched.metadata, {});
    assert.deepEqual(patched.info, { tier: 'gold' });
    assert.ok(patched.updated_at > user.updated_at);
    assert.equal(patched.created_at, user.created_at);
  });

  it('with an empty body changes nothing', async () => {
    const user = await createUser({ name: 'Same' });
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
      payload: {},
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), user);
  });

  it('re-checks reference uniqueness: 409 when it is taken, 200 when it is the same user', async () => {
    await createUser({ reference: 'taken-ref' });
    const user = await createUser({ reference: 'mine-ref' });
    const clash = await t.app.inject({
      method: 'PATCH',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
      payload: { reference: 'taken-ref' },
    });
    assert.equal(clash.statusCode, 409);
    assert.equal(clash.json().error.code, 'user_reference_conflict');
    const same = await t.app.inject({
      method: 'PATCH',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
      payload: { reference: 'mine-ref' },
    });
    assert.equal(same.statusCode, 200);
  });

  it('answers 404 for an unknown user and 422 for an invalid field', async () => {
    const missing = await t.app.inject({
      method: 'PATCH',
      url: '/v1/agents/users/usr_nope',
      headers: headers(),
      payload: { name: 'x' },
    });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'user_not_found');
    const user = await createUser();
    const invalid = await t.app.inject({
      method: 'PATCH',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
      payload: { email: 5 },
    });
    assert.equal(invalid.statusCode, 422);
    assert.deepEqual(invalid.json().detail[0], {
      loc: ['body', 'email'],
      msg: invalid.json().detail[0].msg,
      type: 'string_type',
    });
  });
});

describe('DELETE /v1/agents/users/{user_id}', () => {
  it('soft-deletes with 204 and no body; the user is then 404 and gone from the list', async () => {
    const user = await createUser({ reference: 'to-delete' });
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
    });
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    const read = await t.app.inject({ url: `/v1/agents/users/${user.id}`, headers: headers() });
    assert.equal(read.statusCode, 404);
    const list = await t.app.inject({ url: '/v1/agents/users?reference=to-delete', headers: headers() });
    assert.deepEqual(list.json().items, []);
  });

  it('frees the reference for a new user', async () => {
    const user = await createUser({ reference: 'reusable' });
    await t.app.inject({ method: 'DELETE', url: `/v1/agents/users/${user.id}`, headers: headers() });
    const again = await createUser({ reference: 'reusable' });
    assert.notEqual(again.id, user.id);
  });

  it('answers 404 the second time', async () => {
    const user = await createUser();
    await t.app.inject({ method: 'DELETE', url: `/v1/agents/users/${user.id}`, headers: headers() });
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/v1/agents/users/${user.id}`,
      headers: headers(),
    });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.code, 'user_not_found');
  });
});
