// How a provider's failure reaches a client (docs/internals/decisions.md#provider-failures): by the upstream
// status, a code a client can act on, with the upstream status and message in `context`, and the upstream's
// Retry-After on a 429.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { providerFailure } from '../../src/agents/call-model.ts';
import { ProviderError } from '../../src/agents/provider.ts';

const failure = (status: number | undefined, extra: { retryAfterSeconds?: number } = {}) =>
  providerFailure(
    new ProviderError('upstream failed', {
      ...(status === undefined ? {} : { status }),
      upstreamMessage: 'what the server said',
      ...extra,
    }),
    'openai',
  );

test('no answer or a 5xx is 502 agent_unavailable', () => {
  for (const status of [undefined, 500, 502, 503]) {
    const err = failure(status);
    assert.equal(err.code, 'agent_unavailable', String(status));
    assert.equal(err.statusCode, 502);
  }
  assert.equal(providerFailure(new Error('socket hang up'), 'openai').code, 'agent_unavailable');
});

test('a refused request (400, 404, 422) is 502 agent_rejected with the upstream status and message', () => {
  for (const status of [400, 404, 413, 422]) {
    const err = failure(status);
    assert.equal(err.code, 'agent_rejected');
    assert.deepEqual(err.context, {
      provider: 'openai',
      upstream_status: status,
      upstream_message: 'what the server said',
    });
  }
});

test('a refused key or model (401, 403) is 502 agent_misconfigured', () => {
  assert.equal(failure(401).code, 'agent_misconfigured');
  assert.equal(failure(403).code, 'agent_misconfigured');
});

test('a 429 after the retries is 503 agent_rate_limited with the upstream Retry-After, at least a second', () => {
  const err = failure(429, { retryAfterSeconds: 7 });
  assert.equal(err.code, 'agent_rate_limited');
  assert.equal(err.statusCode, 503);
  assert.deepEqual(err.headers, { 'retry-after': '7' });
  assert.deepEqual(failure(429).headers, { 'retry-after': '1' });
  assert.deepEqual(failure(429, { retryAfterSeconds: 0 }).headers, { 'retry-after': '1' });
});
