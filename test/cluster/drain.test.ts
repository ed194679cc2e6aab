// The drain of a cluster process that was once frozen (issue 15, docs/internals/decisions.md#graceful-stop):
// one SIGSTOPped past its leases, then SIGCONTed, took 19–23 s to exit after SIGTERM where the others took
// about 1 s. What holds a closing process is the connections clients left on it: Node's server.close() closes
// only those idle at that instant and stops timing out the others. Here the woken process keeps a connection
// made while it was frozen and never used, a kept-alive one answered when it woke and a stream no longer
// read; it must still exit within a few seconds plus the running turn, and the turn must be stored.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startCluster } from '../helpers/cluster.ts';
import { call } from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import { writeAgentsFile } from '../helpers/sessions.ts';
import { httpRequest, openWire, streamRequest } from '../helpers/wire.ts';

after(killLeftoverChildren);

const ttl = 3000;
/**
 * Drain delay (1 s), what is left of the turn (under 2 s) and the second given to the last bytes, with
 * room for a loaded 2-core machine; before the fix the process was killed by close-with-grace at 30 s.
 */
const exitBoundMs = 15_000;

test('a process SIGSTOPped past its leases, then SIGCONTed, exits 0 within seconds of SIGTERM whatever its clients left open, and its running turn is stored', {
  timeout: 180_000,
}, async (t) => {
  const agents = await writeAgentsFile([{ id: 'slow', scripted: { token_delay_ms: 150 } }]);
  t.after(() => agents.remove());
  const cluster = await startCluster(t, {
    nodes: 3,
    store: 'sqlite',
    leaseTtlMs: ttl,
    env: { PARLEY_AGENTS_FILE: agents.file },
  });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const { urls, apiKey } = cluster;
  const victim = 1;
  const victimPort = Number(new URL(urls[victim] as string).port);
  const created = await call(urls[0] as string, apiKey, 'POST', '/v1/agents/slow/sessions', {});
  assert.ok('status' in created && created.status === 201, JSON.stringify(created));
  const sessionId = String(created.body.id);

  // Frozen until its shards have moved to the others, as after a long GC pause or a stopped container.
  // Clients meanwhile connect (the kernel still accepts) and leave connections behind.
  cluster.pause(victim);
  const silent = await openWire(victimPort);
  const idle = await openWire(victimPort);
  idle.socket.write(httpRequest('GET', '/healthz'));
  await cluster.waitUntilSettled();
  cluster.resume(victim);
  await idle.until('{"status":"ok"}');
  await cluster.waitUntilSettled();

  // A stream through the woken process, read to its first event and then no more.
  const stream = await openWire(victimPort);
  stream.socket.write(streamRequest(sessionId, 'one two three four five six seven eight nine ten', apiKey));
  await stream.until('event: turn.started');
  stream.socket.pause();

  const termAt = Date.now();
  const exit = await cluster.nodes[victim]?.stop('SIGTERM', 40_000);
  const drainMs = Date.now() - termAt;
  t.diagnostic(`the once-stopped process exited ${drainMs} ms after SIGTERM`);
  assert.deepEqual(exit, { code: 0, signal: null }, cluster.nodes[victim]?.stderr());
  assert.ok(drainMs < exitBoundMs, `exited ${drainMs} ms after SIGTERM, not within ${exitBoundMs} ms`);
  stream.socket.resume();
  await Promise.all([silent.closed, idle.closed, stream.closed]);

  // The turn had its time wherever it ran: the others serve the session with its reply stored.
  const page = await call(urls[0] as string, apiKey, 'GET', `/v1/agents/sessions/${sessionId}/messages`);
  assert.ok('status' in page && page.status === 200, JSON.stringify(page));
  assert.deepEqual(
    (page.body.items as Array<{ role: string }>).map((m) => m.role),
    ['user', 'assistant'],
  );
});
