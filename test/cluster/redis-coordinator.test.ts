// RedisCoordinator against a real Redis and a real SQLite store, in one test process: how shards are split,
// handed over, lost, fenced and taken back. The multi-process behaviour is in routing, chaos and rolling.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { createClusterMetrics } from '../../src/cluster/cluster-metrics.ts';
import type { ShardHandler } from '../../src/cluster/coordinator.ts';
import { RedisCoordinator } from '../../src/cluster/redis-coordinator.ts';
import { SHARD_COUNT } from '../../src/shards.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers/process.ts';
import { type RedisServer, startRedis } from '../helpers/redis.ts';

const LEASE_MS = 1000;
const quiet = { info() {}, warn() {} };

class RecordingHandler implements ShardHandler {
  released: number[] = [];
  dropped: number[] = [];
  async release(shards: readonly number[]) {
    this.released.push(...shards);
  }
  drop(shards: readonly number[]) {
    this.dropped.push(...shards);
  }
}

async function setUp(t: TestContext) {
  const redis = await startRedis(t);
  if (!redis) return null;
  const store = new SqliteStore(join(await tempDir(t), 'parley.db'));
  await store.migrate();
  t.after(() => store.close());
  const coordinators: RedisCoordinator[] = [];
  t.after(() => Promise.all(coordinators.map((c) => c.stop())));
  const start = async (name: string, via: Pick<SqliteStore, 'claimShards'> = store) => {
    const handler = new RecordingHandler();
    const coordinator = new RedisCoordinator({
      store: via,
      redisUrl: redis.url,
      nodeUrl: `http://127.0.0.1:1/${name}`,
      leaseMs: LEASE_MS,
      metrics: createClusterMetrics(new Registry()),
      log: quiet,
    });
    coordinator.bind(handler);
    coordinators.push(coordinator);
    await coordinator.start();
    return { coordinator, handler };
  };
  return { redis, store, start };
}

const served = (c: RedisCoordinator) => new Set(c.servedShards());

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(25);
  }
}

async function shardValues(redis: RedisServer): Promise<Array<string | null>> {
  const client = redis.client();
  const keys = Array.from({ length: SHARD_COUNT }, (_, i) => `parley:shard:${i}`);
  return client.mget(keys);
}

describe('RedisCoordinator', () => {
  it('a lone process takes every shard, with epochs issued by the database', async (t) => {
    const setup = await setUp(t);
    if (!setup) return;
    const { coordinator } = await setup.start('a');
    // Not asserted at once after start: on a loaded machine the first round's claim can outlast 70% of
    // the lease, so those leases lapse on arrival (self-fencing) and a later round takes them again.
    await until('it serves every shard', () => coordinator.servedShards().length === SHARD_COUNT, 30_000);
    // Read in the same tick as the wait's last check, so that every fence is still valid; Redis keeps a
    // lease's value at least 30% of the lease longer than the process writes under it.
    const fences = Array.from({ length: SHARD_COUNT }, (_, shard) => coordinator.fence(shard));
    const values = await shardValues(setup.redis);
    for (const [shard, fence] of fences.entries()) {
      assert.ok(fence, `a fence for shard ${shard}`);
      assert.equal(values[shard], `${coordinator.nodeId}|${fence.epoch}`);
    }
    // A write under its fence is accepted: the database agrees on the epoch.
    const again = await setup.store.claimShards('probe', [5]);
    assert.equal(again.get(5), (fences[5]?.epoch ?? 0) + 1);
  });

  it('a second process gets its share handed over, and each shard has exactly one owner', async (t) => {
    const setup = await setUp(t);
    if (!setup) return;
    const a = await setup.start('a');
    const b = await setup.start('b');
    await until(
      'the shards are split',
      () =>
        served(a.coordinator).size + served(b.coordinator).size === SHARD_COUNT &&
        served(b.coordinator).size > 300,
    );
    const mine = served(b.coordinator);
    for (const shard of served(a.coordinator)) assert.ok(!mine.has(shard), `shard ${shard} has two owners`);
    // Every shard b took was first handed over by a (its turns finished, its actors dropped).
    assert.deepEqual(new Set(a.handler.released), mine);
    assert.equal(a.handler.dropped.length, 0);
    // Requests for b's shards go to b.
    const shard = [...mine][0] ?? 0;
    assert.deepEqual(await a.coordinator.refresh(shard), {
      kind: 'remote',
      node: b.coordinator.nodeId,
      url: 'http://127.0.0.1:1/b',
    });
    assert.deepEqual(b.coordinator.route(shard), { kind: 'local' });
  });

  it('a drained process hands every shard over and leaves the membership', async (t) => {
    const setup = await setUp(t);
    if (!setup) return;
    const a = await setup.start('a');
    const b = await setup.start('b');
    await until('b owns shards', () => served(b.coordinator).size > 300);
    await b.coordinator.drain();
    assert.equal(b.coordinator.draining, true);
    assert.equal(b.coordinator.servedShards().length, 0);
    await until('a owns every shard again', () => served(a.coordinator).size === SHARD_COUNT);
    assert.equal(await setup.redis.client().exists(`parley:member:${b.coordinator.nodeId}`), 0);
  });

  it('a process drained while it is still taking shards over hands those over too', async (t) => {
    const setup = await setUp(t);
    if (!setup) return;
    const a = await setup.start('a');
    // b's database answers slowly, so the drain starts while b is between winning leases and holding them.
    const events: string[] = [];
    let claiming: () => void = () => {};
    const claimStarted = new Promise<void>((resolve) => {
      claiming = resolve;
    });
    const b = await setup.start('b', {
      async claimShards(node, shards) {
        claiming();
        await sleep(100);
        const epochs = await setup.store.claimShards(node, shards);
        events.push('claimed');
        return epochs;
      },
    });
    await claimStarted;
    await b.coordinator.drain();
    events.push('drained');
    // The drain covered the shards whose claim was under way: none of them is held after it.
    assert.deepEqual(events.slice(0, 2), ['claimed', 'drained']);
    assert.ok(Array.from({ length: SHARD_COUNT }, (_, s) => b.coordinator.fence(s)).every((f) => f === null));
    await until('a owns every shard again', () => served(a.coordinator).size === SHARD_COUNT);
    const values = await shardValues(setup.redis);
    assert.ok(values.every((v) => v?.startsWith(`${a.coordinator.nodeId}|`)));
  });

  it('a lease taken by another holder is given up at the next renewal, dropping its actors', async (t) => {
    const setup = await setUp(t);
    if (!setup) return;
    const a = await setup.start('a');
    await setup.redis.client().set('parley:shard:42', 'intruder|999', 'PX', 60_000);
    await until('shard 42 is dropped', () => a.handler.dropped.includes(42));
    assert.equal(a.coordinator.fence(42), null);
    assert.equal(a.coordinator.serves(42), false);
    assert.equal(a.coordinator.servedShards().length, SHARD_COUNT - 1);
  });

  it('stops writing before its leases can lapse while Redis is away, and takes the shards back with newer epochs', async (t) => {
    const setup = await setUp(t);
    if (!setup) return;
    const a = await setup.start('a');
    const before = a.coordinator.fence(7)?.epoch ?? 0;
    assert.equal(a.coordinator.connected, true);
    await setup.redis.stop('SIGKILL');
    const stopped = Date.now();
    await until('every fence is gone', () => a.coordinator.fence(7) === null, LEASE_MS * 2);
    // Self-fencing comes no later than the lease's TTL after the last renewal could have been sent.
    assert.ok(Date.now() - stopped <= LEASE_MS, `fenced after ${Date.now() - stopped} ms`);
    assert.equal(a.coordinator.servedShards().length, 0);
    // Cut off for a whole TTL, it says so (readiness fails on it).
    await until('it reports the loss of Redis', () => !a.coordinator.connected, LEASE_MS * 2);
    await setup.redis.restart({ downMs: 0 });
    await until('the shards are back', () => a.coordinator.servedShards().length === SHARD_COUNT);
    assert.ok((a.coordinator.fence(7)?.epoch ?? 0) > before);
    assert.equal(a.coordinator.connected, true);
  });
});
