// Rate limits counted in Redis: two Fastify instances (standing in for two processes, each with its own
// client) share one budget, and an unreachable or hung Redis lets requests through quickly, uncounted.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { registerErrorHandling } from '../../../src/http/server/error-handler.ts';
import { RATE_LIMIT_NAMESPACE, registerRateLimit } from '../../../src/http/server/rate-limit.ts';
import { rateLimitRedis } from '../../../src/http/server/rate-limit-redis.ts';
import { startRedis } from '../../helpers/redis.ts';

async function limitedApp(redis: Redis): Promise<FastifyInstance> {
  const app = Fastify();
  registerErrorHandling(app);
  await registerRateLimit(app, { perMinute: 5, key: () => 'k', redis });
  app.get('/ping', async () => ({ ok: true }));
  await app.ready();
  return app;
}

/** GETs /ping and measures how long the answer took. */
async function timedPing(app: FastifyInstance) {
  const startedAt = performance.now();
  const res = await app.inject({ url: '/ping' });
  return { res, ms: performance.now() - startedAt };
}

describe('rate limits counted in Redis', () => {
  it('share one budget between instances, and give way to availability when Redis fails', async (t) => {
    const server = await startRedis(t);
    if (!server) return;
    const clients: Redis[] = [];
    const apps: FastifyInstance[] = [];
    t.after(async () => {
      await Promise.all(apps.map((app) => app.close()));
      for (const client of clients) client.disconnect();
    });
    for (let i = 0; i < 2; i++) {
      const client = rateLimitRedis(server.url);
      clients.push(client);
      // With the offline queue off, a request before the connection is up would go uncounted.
      await once(client, 'ready');
      apps.push(await limitedApp(client));
    }

    await t.test(
      'counts requests to both instances against one budget, and refuses the sixth with 429 and Retry-After',
      async () => {
        const [a, b] = apps as [FastifyInstance, FastifyInstance];
        const remaining: string[] = [];
        for (const app of [a, b, a, b, a]) {
          const res = await app.inject({ url: '/ping' });
          assert.equal(res.statusCode, 200);
          assert.equal(res.headers['ratelimit-limit'], '5');
          assert.ok(Number(res.headers['ratelimit-reset']) > 0);
          remaining.push(String(res.headers['ratelimit-remaining']));
        }
        assert.deepEqual(remaining, ['4', '3', '2', '1', '0']);
        const limited = await b.inject({ url: '/ping' });
        assert.equal(limited.statusCode, 429);
        assert.equal(limited.json().error.code, 'rate_limited');
        assert.equal(limited.json().error.context.limit, 5);
        assert.ok(Number(limited.headers['retry-after']) >= 1);
        assert.equal(limited.headers['ratelimit-remaining'], '0');
      },
    );

    await t.test(
      'keeps the counter under the parley:rl: namespace with the window as its expiry',
      async () => {
        const reader = server.client();
        {
          assert.equal(await reader.get(`${RATE_LIMIT_NAMESPACE}k`), '6');
          const ttl = await reader.pttl(`${RATE_LIMIT_NAMESPACE}k`);
          assert.ok(ttl > 0 && ttl <= 60_000, `PTTL ${ttl}`);
        }
      },
    );

    // The timeout turns a missing command timeout into a failure rather than a test run that never ends.
    await t.test(
      'serves requests uncounted, within the command timeout, while Redis hangs',
      {
        timeout: 5_000,
      },
      async () => {
        server.pause();
        try {
          for (const app of apps) {
            const { res, ms } = await timedPing(app);
            assert.equal(res.statusCode, 200);
            assert.ok(ms < 1_000, `took ${Math.round(ms)} ms`);
          }
        } finally {
          server.resume();
        }
      },
    );

    await t.test('serves requests at once while Redis is down', { timeout: 5_000 }, async () => {
      // Not events.once: the clients may report the reset as an error on the way to 'close'.
      const closed = clients.map((client) => new Promise((resolve) => client.once('close', resolve)));
      await server.stop();
      await Promise.all(closed);
      for (const app of apps) {
        for (let i = 0; i < 3; i++) {
          const { res, ms } = await timedPing(app);
          assert.equal(res.statusCode, 200);
          assert.ok(ms < 200, `took ${Math.round(ms)} ms`);
        }
      }
    });
  });
});
