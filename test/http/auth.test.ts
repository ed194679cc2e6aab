// API-key authentication and per-key rate limiting of the server-side family.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useTestApp } from '../helpers/app.ts';

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
