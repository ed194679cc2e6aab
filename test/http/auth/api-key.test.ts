// API-key authentication and per-key rate limiting of the server-side family.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { apiKeyPrefix, hashApiKey } from '../../../src/auth/api-keys.ts';
import { SqliteStore } from '../../../src/store/sqlite/store.ts';
import { apiKeyIdOf, type TestApp, useTestApp } from '../../helpers/app.ts';
import { runCli } from '../../helpers/process.ts';

/** The status of one request with `key`, and its error code if any. */
async function statusWith(t: TestApp, key: string): Promise<[number, string | undefined]> {
  const res = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': key } });
  return [res.statusCode, res.statusCode === 200 ? undefined : res.json().error.code];
}

describe('API-key authentication', () => {
  const t = useTestApp();

  it('answers 401 unauthorized without X-API-Key, with an empty one, and with only a bearer token', async () => {
    for (const headers of [{}, { 'x-api-key': '' }, { authorization: 'Bearer abc.def.ghi' }]) {
      const res = await t.app.inject({ url: '/v1/agents/users', headers });
      assert.equal(res.statusCode, 401, JSON.stringify(headers));
      assert.equal(res.json().error.code, 'unauthorized');
      assert.equal(res.json().error.name, 'UnauthorizedError');
    }
  });

  it('answers 401 invalid_api_key for an unknown key', async () => {
    const res = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': 'pk_unknown' } });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().error.code, 'invalid_api_key');
  });

  it('answers 401 invalid_api_key once the key is revoked', async () => {
    const key = await t.createKey('revocable');
    const before = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': key } });
    assert.equal(before.statusCode, 200);
    const [record] = await t.store.listApiKeys('revocable');
    assert.ok(record);
    await t.store.revokeApiKey(record.id);
    const afterRevoke = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': key } });
    assert.equal(afterRevoke.statusCode, 401);
    assert.equal(afterRevoke.json().error.code, 'invalid_api_key');
  });

  it('refuses a key on the very next request after the store revoked it, though it was accepted and kept before', async () => {
    const key = await t.createKey('kept');
    // Twice: the second time the key is served from the cache of authenticated keys.
    assert.deepEqual(await statusWith(t, key), [200, undefined]);
    assert.deepEqual(await statusWith(t, key), [200, undefined]);
    assert.equal(await t.store.revokeApiKey(await apiKeyIdOf(t, key)), true);
    assert.deepEqual(await statusWith(t, key), [401, 'invalid_api_key']);
    assert.deepEqual(await statusWith(t, t.apiKey), [200, undefined], 'other keys still pass');
  });

  it('refuses a key at once when another connection to the database revokes it', async () => {
    const key = await t.createKey('revoked-elsewhere');
    assert.deepEqual(await statusWith(t, key), [200, undefined]);
    assert.deepEqual(await statusWith(t, key), [200, undefined]);
    const other = new SqliteStore(join(t.dataDir, 'parley.db'));
    try {
      assert.equal(await other.revokeApiKey(await apiKeyIdOf(t, key)), true);
    } finally {
      await other.close();
    }
    assert.deepEqual(await statusWith(t, key), [401, 'invalid_api_key']);
    assert.deepEqual(await statusWith(t, t.apiKey), [200, undefined], 'other keys still pass');
  });

  it('refuses a key on the next request once `parley keys revoke` has returned in another process', async () => {
    const key = await t.createKey('revoked-by-cli');
    assert.deepEqual(await statusWith(t, key), [200, undefined]);
    assert.deepEqual(await statusWith(t, key), [200, undefined]);
    const revoked = await runCli(t.dataDir, ['keys', 'revoke', await apiKeyIdOf(t, key)]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.deepEqual(await statusWith(t, key), [401, 'invalid_api_key']);
  });

  it('accepts a key created by another connection on its first request, after that key was refused', async () => {
    const other = new SqliteStore(join(t.dataDir, 'parley.db'));
    try {
      assert.deepEqual(await statusWith(t, 'pk_notyet'), [401, 'invalid_api_key']);
      await other.createTenant('late', 'Late');
      await other.createApiKey({
        id: 'key_late',
        tenant_id: 'late',
        hash: hashApiKey('pk_notyet'),
        prefix: apiKeyPrefix('pk_notyet'),
        agents: ['*'],
      });
    } finally {
      await other.close();
    }
    assert.deepEqual(await statusWith(t, 'pk_notyet'), [200, undefined]);
  });

  it('authenticates before validating: a bad body without a key is 401, not 422', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      payload: { reference: 'bad ref' },
    });
    assert.equal(res.statusCode, 401);
  });

  it('leaves the operations endpoints open', async () => {
    for (const url of ['/healthz', '/readyz', '/metrics', '/openapi.json']) {
      const res = await t.app.inject({ url });
      assert.equal(res.statusCode, 200, url);
    }
  });
});

describe('rate limiting per API key', () => {
  const t = useTestApp({ env: { PARLEY_RATE_LIMIT_KEY: '3' } });

  it('sends RateLimit headers and answers 429 rate_limited with Retry-After past the budget', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': t.apiKey } });
      statuses.push(res.statusCode);
      assert.equal(res.headers['ratelimit-limit'], '3');
      assert.equal(res.headers['ratelimit-remaining'], String(2 - i));
      assert.ok(Number(res.headers['ratelimit-reset']) > 0);
    }
    assert.deepEqual(statuses, [200, 200, 200]);
    const limited = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': t.apiKey } });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().error.code, 'rate_limited');
    assert.equal(limited.json().error.name, 'RateLimitExceededError');
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    assert.equal(limited.json().request_id, limited.headers['x-request-id']);
  });

  it('keeps a separate budget for each key', async () => {
    const other = await t.createKey('other-tenant');
    const res = await t.app.inject({ url: '/v1/agents/users', headers: { 'x-api-key': other } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['ratelimit-remaining'], '2');
  });
});
