// Acceptance of issue 6, graceful drain: every process of a three-process cluster is SIGTERMed in turn and
// started again, as a rolling deploy does, under a load of idempotent sends. A draining process hands its
// shards over before it exits, so no client may see anything but a retryable 503 (or a refused
// connection, which a load balancer answers by picking another process), and no shard may be left
// without a lease holder for more than 2 s, measured by polling the lease keys in Redis. The load acts
// as a load balancer with health checks (GET /readyz every 100 ms): a process cannot help being sent a
// connection in the instant it closes its listener, only tell balancers beforehand to stop sending.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCluster, watchOwnership } from '../helpers/cluster.ts';
import {
  checkEpochOrder,
  checkSessions,
  createSessions,
  type Miss,
  startLoad,
  summarizeMisses,
} from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';

after(killLeftoverChildren);

/** What a client behind a load balancer may meet during a rolling deploy without calling it a failure. */
const acceptable = (miss: Miss) =>
  miss.error === 'refused' ||
  (miss.status === 503 &&
    (miss.code === 'shard_moving' || miss.code === 'service_unavailable') &&
    miss.retryAfter !== undefined);

test('a rolling SIGTERM of every process under load fails no request but with a retryable 503, and no shard is ownerless over 2 s', {
  timeout: 240_000,
}, async (t) => {
  const cluster = await startCluster(t, { nodes: 3, store: 'sqlite', leaseTtlMs: 3000 });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const { urls, apiKey } = cluster;
  const sessions = await createSessions(urls, apiKey, 24);

  // Timeouts count as failures here, so they are long: nothing should ever hang during a drain. A reset
  // connection counts too: the request may have been read, and a balancer would not retry a POST.
  const load = startLoad({
    urls,
    apiKey,
    sessions,
    thinkMs: 50,
    requestTimeoutMs: 10_000,
    maxTurns: 400,
    readinessPollMs: 100,
  });
  t.after(() => load.abort());
  const ownership = watchOwnership(cluster, 100);
  await sleep(1_000);

  const startedAt = Date.now();
  const drains: string[] = [];
  for (const i of [0, 1, 2]) {
    const termAt = Date.now();
    const exit = await cluster.nodes[i]?.stop('SIGTERM', 30_000);
    drains.push(`node ${i}: SIGTERM at +${termAt - startedAt} ms, exited ${Date.now() - termAt} ms later`);
    assert.deepEqual(exit, { code: 0, signal: null }, `node ${i} exits 0 after its drain`);
    await cluster.restart(i);
    await cluster.waitUntilSettled();
  }
  await sleep(1_000);

  const result = await load.stop();
  const gaps = await ownership.stop();
  t.diagnostic(`${result.attempts} attempts; misses: ${summarizeMisses(result.misses)}`);
  t.diagnostic(
    `ownership: ${gaps.polls} polls (longest interval ${gaps.maxIntervalMs} ms, ${gaps.errors} errors); ` +
      `longest gaps ${JSON.stringify(gaps.worst(5))}`,
  );

  t.diagnostic(drains.join('; '));
  const failures = result.misses.filter((m) => !acceptable(m));
  assert.deepEqual(
    failures.map((m) => `+${m.at - startedAt} ms: node ${m.target} ${m.status ?? m.error} ${m.message}`),
    [],
    `only retryable 503s and refused connections (${drains.join('; ')})`,
  );
  assert.equal(gaps.errors, 0, 'Redis answered every poll');
  const [worst] = gaps.worst(1);
  assert.ok(worst && worst.ms <= 2_000, `shard ${worst?.shard} was without a lease for ${worst?.ms} ms`);

  const problems = await checkSessions(urls, apiKey, result, sessions);
  assert.deepEqual(problems, [], problems.slice(0, 20).join('\n'));
  const epochs = checkEpochOrder(cluster.sqliteFile);
  assert.deepEqual(epochs, [], epochs.slice(0, 20).join('\n'));
});
