// A cap across every client: uses counted in clock hours, refused beyond the limit until the hour ends, shared
// by two processes through Redis, and counted by each process alone while Redis does not answer.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { AppError } from '../../../src/errors.ts';
import { HourlyCap } from '../../../src/http/server/hourly-cap.ts';
import { rateLimitRedis } from '../../../src/http/server/rate-limit-redis.ts';
import { startRedis } from '../../helpers/redis.ts';

const HOUR = 3_600_000;

/** The refusal `take` throws, or null when it is let through. */
async function refusal(cap: HourlyCap): Promise<AppError | null> {
  try {
    await cap.take();
    return null;
  } catch (err) {
    assert.ok(err instanceof AppError, String(err));
    return err;
  }
}

describe('an hourly cap', () => {
  it('lets `limit` uses through in a clock hour, refuses the next until the hour ends, then starts again', async () => {
    let now = 5 * HOUR + 45 * 60_000;
    const cap = new HourlyCap({ name: 'demo_sends', limit: 2, now: () => now });
    assert.equal(await refusal(cap), null);
    assert.equal(await refusal(cap), null);
    const refused = await refusal(cap);
    assert.equal(refused?.code, 'rate_limited');
    assert.equal(refused?.statusCode, 429);
    assert.equal(refused?.headers?.['retry-after'], '900');
    assert.deepEqual(refused?.context, {
      limit: 2,
      window_seconds: 3600,
      retry_after_seconds: 900,
      cap: 'demo_sends',
    });
    assert.match(refused?.message ?? '', /demo sends of every client together are at their cap of 2 an hour/);
    now = 6 * HOUR;
    assert.equal(await refusal(cap), null);
  });

  it('is shared by the processes of a cluster through Redis, and held by each alone while Redis is away', async (t) => {
    const server = await startRedis(t);
    if (!server) return;
    const clients: Redis[] = [];
    t.after(() => {
      for (const client of clients) client.disconnect();
    });
    const caps: HourlyCap[] = [];
    for (let i = 0; i < 2; i++) {
      const client = rateLimitRedis(server.url);
      clients.push(client);
      await once(client, 'ready');
      caps.push(new HourlyCap({ name: 'demo_conversations', limit: 3, redis: client }));
    }
    const [a, b] = caps as [HourlyCap, HourlyCap];
    for (const cap of [a, b, a]) assert.equal(await refusal(cap), null);
    assert.equal((await refusal(b))?.code, 'rate_limited');
    const keys = await server.client().keys('parley:rl:cap:demo_conversations:*');
    assert.equal(keys.length, 1);
    const ttl = await server.client().pttl(keys[0] ?? '');
    assert.ok(ttl > 0 && ttl <= HOUR, `PTTL ${ttl}`);

    await server.stop();
    // Each process counts on its own now: three more each, then refused.
    for (let i = 0; i < 3; i++) assert.equal(await refusal(a), null);
    assert.equal((await refusal(a))?.code, 'rate_limited');
  });
});
