// The cluster tests' own tools, checked without cluster mode: the private Redis server (start, restart
// empty on the same port, stop), reading leases and members as the contract lays them out, and the load
// generator with its checker against one ordinary process killed mid-load. When these fail, a red
// cluster test says nothing about Parley.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  clusterApiKey,
  parseLease,
  readMembers,
  shardKey,
  shardKeys,
  unsettled,
  watchOwnership,
} from '../helpers/cluster.ts';
import {
  type Acked,
  call,
  checkEpochOrder,
  checkSessions,
  createSessions,
  type LoadResult,
  startLoad,
  summarizeMisses,
} from '../helpers/load.ts';
import { killLeftoverChildren, startService, tempDir } from '../helpers/process.ts';
import { startRedis } from '../helpers/redis.ts';

after(killLeftoverChildren);

describe('the test Redis server', { timeout: 30_000 }, () => {
  test('it answers PING on its loopback port, and a restart keeps the port but not the data', async (t) => {
    const redis = await startRedis(t);
    if (!redis) return;
    assert.equal(redis.url, `redis://127.0.0.1:${redis.port}`);
    const client = redis.client();
    assert.equal(await client.ping(), 'PONG');
    await client.set('parley:test', 'before');

    await redis.restart();
    // The client reconnects by itself, as the service's clients must.
    assert.equal(await client.ping(), 'PONG');
    assert.equal(await client.get('parley:test'), null, 'a restarted server starts empty');
  });

  test('after stop the port refuses connections', async (t) => {
    const redis = await startRedis(t);
    if (!redis) return;
    await redis.stop();
    await assert.rejects(
      new Promise((resolve, reject) => {
        const socket = connect(redis.port, '127.0.0.1', () => resolve(socket.destroy()));
        socket.once('error', reject);
      }),
      /ECONNREFUSED/,
    );
  });
});

describe('reading ownership from Redis', { timeout: 30_000 }, () => {
  test('the settle check names what is missing, and the gap watcher measures a lease key that goes missing', async (t) => {
    // Leases and members written by hand, as the contract (notes/cluster-contract.md) lays them out.
    const redis = await startRedis(t);
    if (!redis) return;
    const client = redis.client();
    const urls = ['http://127.0.0.1:1', 'http://127.0.0.1:2'];
    await client.set('parley:member:n1', JSON.stringify({ url: urls[0], boot: 'b1' }));
    await client.set('parley:member:n2', JSON.stringify({ url: `${urls[1]}/`, boot: 'b2' }));
    await client.mset(shardKeys.flatMap((key, shard) => [key, `${shard % 2 ? 'n2' : 'n1'}|${shard + 1}`]));

    const members = await readMembers(client);
    assert.deepEqual([...members].sort(), [
      ['n1', urls[0]],
      ['n2', urls[1]],
    ]);
    const leases = async () => (await client.mget(shardKeys)).map(parseLease);
    assert.equal(unsettled(members, await leases(), urls), '');
    assert.deepEqual((await leases())[3], { nodeId: 'n2', epoch: 4 });

    await client.set(shardKey(5), 'n2|0');
    assert.equal(unsettled(members, await leases(), urls), 'shard 5 is still being claimed (epoch 0)');
    await client.set(shardKey(5), 'n3|9');
    assert.equal(unsettled(members, await leases(), urls), 'shard 5 is held by n3, not a member');
    await client.del(shardKey(5));
    assert.equal(unsettled(members, await leases(), urls), 'shard 5 has no lease');
    await client.set(shardKey(5), 'n2|6');
    assert.equal(
      unsettled(members, await leases(), [...urls, 'http://127.0.0.1:3']),
      'http://127.0.0.1:3 is not a member',
    );

    const watcher = watchOwnership({ redisClient: client }, 50);
    await sleep(200);
    await client.del(shardKey(7));
    await sleep(600);
    await client.set(shardKey(7), 'n2|8');
    await sleep(200);
    const gaps = await watcher.stop();
    assert.equal(gaps.errors, 0);
    assert.equal(gaps.worst(1)[0]?.shard, 7);
    assert.ok(Math.abs((gaps.longest[7] ?? 0) - 600) < 150, `gap of ${gaps.longest[7]} ms, about 600`);
    assert.equal(gaps.longest[8], 0);
  });
});

describe('the load generator and its checker against one process', { timeout: 120_000 }, () => {
  test('a load survives a SIGKILL and restart of its only process, and the checker finds every acknowledged send stored once', async (t) => {
    // Without REDIS_URL the one process owns every shard; killed mid-load, its in-flight sends are retried
    // with the same Idempotency-Key once it is back, which is what the cluster tests rely on.
    const dataDir = await tempDir(t, 'parley-load-');
    const env = {
      PARLEY_BOOTSTRAP_API_KEY: clusterApiKey,
      PARLEY_RATE_LIMIT_KEY: '1000000',
      LOG_LEVEL: 'warn',
    };
    let service = await startService({ dataDir, env, readyTimeoutMs: 60_000 });
    t.after(() => service.kill());
    const urls = [service.url];
    const sessions = await createSessions(urls, clusterApiKey, 8);

    const load = startLoad({ urls, apiKey: clusterApiKey, sessions, thinkMs: 20 });
    t.after(() => load.abort());
    await waitFor(() => sessions.every((s) => (load.acked.get(s)?.length ?? 0) >= 5), 20_000);
    await service.stop('SIGKILL');
    await sleep(300);
    service = await startService({ dataDir, env, port: service.port, readyTimeoutMs: 60_000 });
    const resumedAt = Date.now();
    await waitFor(
      () => sessions.every((s) => (load.acked.get(s)?.at(-1)?.at ?? 0) > resumedAt + 500),
      20_000,
    );
    const result = await load.stop();
    t.diagnostic(`${result.attempts} attempts; misses: ${summarizeMisses(result.misses)}`);

    const refused = result.misses.filter((m) => m.error === 'refused' || m.error === 'reset');
    assert.ok(refused.length > 0, 'the kill should have been felt by the load');
    assert.deepEqual(
      result.misses.filter((m) => !m.retried),
      [],
      `every miss was retried: ${summarizeMisses(result.misses)}`,
    );
    assert.deepEqual(await checkSessions(urls, clusterApiKey, result, sessions), []);
    assert.deepEqual(checkEpochOrder(join(dataDir, 'parley.db'), sessions), []);
  });

  test('the checker notices a duplicated, a missing and a foreign message', async (t) => {
    // A checker that cannot fail proves nothing: feed it a history the load did not acknowledge.
    const dataDir = await tempDir(t, 'parley-load-');
    const env = { PARLEY_BOOTSTRAP_API_KEY: clusterApiKey, LOG_LEVEL: 'warn' };
    const service = await startService({ dataDir, env, readyTimeoutMs: 60_000 });
    t.after(() => service.kill());
    const urls = [service.url];
    const [a, b, c] = await createSessions(urls, clusterApiKey, 3);
    assert.ok(a && b && c);
    const send = (session: string, text: string, key: string) =>
      call(
        service.url,
        clusterApiKey,
        'POST',
        `/v1/agents/sessions/${session}/messages`,
        { content: text },
        {
          'idempotency-key': key,
        },
      );
    // a: "seq 1" stored twice under two keys. b: acknowledged twice, stored once. c: "seq 2" before "seq 1".
    await send(a, 'seq 1', 'k1');
    await send(a, 'seq 1', 'k2');
    await send(b, 'seq 1', 'k1');
    await send(c, 'seq 2', 'k1');
    await send(c, 'seq 1', 'k2');
    const ack = (seq: number): Acked => ({
      seq,
      replyId: 'x',
      replyText: '',
      node: undefined,
      at: 0,
      replayed: false,
    });
    const result: LoadResult = {
      acked: new Map([
        [a, [ack(1)]],
        [b, [ack(1), ack(2)]],
        [c, [ack(1), ack(2)]],
      ]),
      unacked: new Map(),
      misses: [],
      attempts: 0,
    };
    const problems = await checkSessions(urls, clusterApiKey, result, [a, b, c]);
    assert.ok(
      problems.some((p) => p.startsWith(`${a}: 2 user messages stored, 1 acknowledged`)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.startsWith(`${b}: 1 user messages stored, 2 acknowledged`)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.startsWith(`${c}: user message 1 is "seq 2"`)),
      problems.join('\n'),
    );
  });
});

/** Polls `done` every 50 ms; fails after `timeoutMs`. */
async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not done within ${timeoutMs} ms`);
    await sleep(50);
  }
}
