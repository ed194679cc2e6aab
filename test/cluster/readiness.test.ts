// Readiness in cluster mode: a process that cannot reach Redis holds no lease for long and cannot tell who
// owns a shard, so /readyz fails on it (and a balancer sends elsewhere) until Redis answers again.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCluster } from '../helpers/cluster.ts';
import { killLeftoverChildren } from '../helpers/process.ts';

after(killLeftoverChildren);

test('a process cut off from Redis for a lease TTL fails readiness, and is ready again once Redis answers', {
  timeout: 60_000,
}, async (t) => {
  const cluster = await startCluster(t, { nodes: 1, store: 'sqlite' });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const readyz = async () => {
    const res = await fetch(`${cluster.urls[0]}/readyz`);
    return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } };
  };
  assert.equal((await readyz()).status, 200);

  await cluster.redis.stop('SIGKILL');
  const stopped = Date.now();
  let answer = await readyz();
  while (answer.status === 200 && Date.now() - stopped < cluster.leaseTtlMs + 2_000) {
    await sleep(100);
    answer = await readyz();
  }
  assert.equal(answer.status, 503);
  assert.equal(answer.body.error?.code, 'service_unavailable');
  assert.match(answer.body.error?.message ?? '', /Redis/);
  // Alive all along: only readiness changes.
  assert.equal((await fetch(`${cluster.urls[0]}/healthz`)).status, 200);

  await cluster.redis.restart();
  const restarted = Date.now();
  while ((await readyz()).status !== 200) {
    assert.ok(Date.now() - restarted < cluster.leaseTtlMs + 5_000, 'ready again after Redis came back');
    await sleep(100);
  }
});
