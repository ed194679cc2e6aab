// x-parley-node names the process (host and PID) that served a clustered request: for an operator who asks
// for it with PARLEY_NODE_HEADER=true, never sent to every client by default (issue 15, finding 6).
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, it, type TestContext } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { buildTestApp } from '../../helpers/app.ts';
import { startRedis } from '../../helpers/redis.ts';

/** The headers of a /healthz answer from a one-process cluster on its own Redis, built with `env`. */
async function clusteredAnswerHeaders(t: TestContext, env: Record<string, string> = {}) {
  const redis = await startRedis(t);
  if (!redis) return null;
  const built = await buildTestApp({
    REDIS_URL: redis.url,
    PARLEY_NODE_URL: 'http://127.0.0.1:1',
    PARLEY_TOKEN_SECRET: 'node-header-test-secret-0123456789abcdef',
    ...env,
  });
  t.after(() => built.close());
  const res = await built.app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(res.statusCode, 200, res.body);
  return res.headers;
}

describe('x-parley-node', () => {
  it('is configured by PARLEY_NODE_HEADER, true or false (default false); another value stops the start', () => {
    assert.equal(loadConfig({}).nodeHeader, false);
    assert.equal(loadConfig({ PARLEY_NODE_HEADER: 'true' }).nodeHeader, true);
    assert.equal(loadConfig({ PARLEY_NODE_HEADER: 'false' }).nodeHeader, false);
    assert.throws(
      () => loadConfig({ PARLEY_NODE_HEADER: 'yes' }),
      (err: unknown) => err instanceof ConfigError && /PARLEY_NODE_HEADER/.test(err.message),
    );
  });

  it('is absent from a clustered answer by default', async (t) => {
    const headers = await clusteredAnswerHeaders(t);
    if (!headers) return;
    assert.equal(headers['x-parley-node'], undefined);
  });

  it('names the serving process (host and PID) when PARLEY_NODE_HEADER=true', async (t) => {
    const headers = await clusteredAnswerHeaders(t, { PARLEY_NODE_HEADER: 'true' });
    if (!headers) return;
    assert.ok(String(headers['x-parley-node']).startsWith(`${hostname()}-${process.pid}-`));
  });
});
