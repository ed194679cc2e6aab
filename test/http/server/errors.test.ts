// The failures Fastify itself produces leave in the documented shapes too (docs/reference/errors.md), and
// every response has X-Request-Id.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useTestApp } from '../../helpers/app.ts';

const t = useTestApp({ env: { PARLEY_MAX_BODY_BYTES: '2048' } });

function assertEnvelope(body: Record<string, unknown>, code: string, requestId: string | undefined) {
  const error = body.error as Record<string, unknown>;
  assert.equal(error.code, code);
  assert.match(String(error.name), /^[A-Z][A-Za-z]+$/);
  assert.equal(typeof error.message, 'string');
  assert.equal(body.request_id, requestId);
  assert.ok(!Number.isNaN(Date.parse(String(body.timestamp))));
}

describe('framework errors', () => {
  it('answers an unknown route with 404 not_found in the envelope', async () => {
    const res = await t.app.inject({ url: '/v1/nothing-here' });
    assert.equal(res.statusCode, 404);
    assertEnvelope(res.json(), 'not_found', res.headers['x-request-id'] as string);
  });

  it('answers malformed JSON with 422 at ["body"], type json_invalid', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail[0].loc, ['body']);
    assert.equal(res.json().detail[0].type, 'json_invalid');
  });

  it('refuses prototype-poisoning JSON with 422 key_forbidden at the key (it is valid JSON)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      payload: '{"metadata": {"__proto__": {"admin": true}}}',
    });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail, [
      {
        loc: ['body', 'metadata', '__proto__'],
        msg: 'Keys named __proto__, or constructor holding prototype, are not accepted',
        type: 'key_forbidden',
      },
    ]);
  });

  it('treats an empty JSON body as no fields', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      payload: '',
    });
    assert.equal(res.statusCode, 201);
  });

  it('answers a body over the limit with 413 payload_too_large', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/users',
      headers: { 'x-api-key': t.apiKey },
      payload: { name: 'x'.repeat(4096) },
    });
    assert.equal(res.statusCode, 413);
    assertEnvelope(res.json(), 'payload_too_large', res.headers['x-request-id'] as string);
  });

  it('answers a body of the wrong content type with 415 unsupported_media_type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/agents/users',
        headers: { 'x-api-key': t.apiKey, 'content-type': type },
        payload: 'name=x',
      });
      assert.equal(res.statusCode, 415, type);
      assertEnvelope(res.json(), 'unsupported_media_type', res.headers['x-request-id'] as string);
    }
  });

  it('answers a malformed URL with 400 bad_request and a request id', async () => {
    const res = await t.app.inject({ url: '/v1/agents/users/%E0%A4%A' });
    assert.ok([400, 404].includes(res.statusCode), String(res.statusCode));
    assert.ok(res.headers['x-request-id']);
    assert.equal(typeof res.json().error.code, 'string');
  });
});

describe('X-Request-Id', () => {
  it('is on successful and failed responses alike, and matches request_id', async () => {
    const ok = await t.app.inject({ url: '/healthz' });
    assert.match(String(ok.headers['x-request-id']), /^req_[0-9a-z]{16}$/);
    const fail = await t.app.inject({ url: '/v1/agents/users' });
    assert.equal(fail.statusCode, 401);
    assert.equal(fail.json().request_id, fail.headers['x-request-id']);
  });

  it("keeps a caller's tame X-Request-Id and replaces an unsafe one", async () => {
    const kept = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'trace-123:abc' } });
    assert.equal(kept.headers['x-request-id'], 'trace-123:abc');
    const replaced = await t.app.inject({
      url: '/healthz',
      headers: { 'x-request-id': 'bad id\twith spaces' },
    });
    assert.match(String(replaced.headers['x-request-id']), /^req_/);
  });
});
