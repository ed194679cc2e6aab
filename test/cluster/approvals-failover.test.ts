// Approvals when the owner of their sessions is SIGKILLed in a 3-process cluster (docs/internals/decisions.md
// #approvals), on SQLite and PostgreSQL, with a real key-honouring tool: one session's approved call had not
// reached the tool yet (a), another's was running (b), a third's turn waited for its decisions (c). On the new
// owner each turn goes on (the first two by themselves, through its sweep; the third when decided through
// another process): every approved call applied once and seen at most twice, no denied call ever seen. And a
// cancel sent to a process that does not own the session reaches the owner.
import assert from 'node:assert/strict';
import { after, describe, type TestContext, test } from 'node:test';
import { approvalAgents } from '../helpers/approvals.ts';
import { type Cluster, startCluster } from '../helpers/cluster.ts';
import { call, callAnyNode } from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import { startToolReceiver, type ToolReceiver, writeAgentsFile } from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

after(killLeftoverChildren);

interface Paused {
  sessionId: string;
  turnId: string;
  refund: string;
  email: string;
}

/** A session created through node `via` (so owned by it), whose turn waits for `refund` and `email`. */
async function pausedOn(cluster: Cluster, via: number): Promise<Paused> {
  const url = cluster.urls[via] as string;
  const created = await call(url, cluster.apiKey, 'POST', '/v1/agents/shop/sessions', {});
  assert.ok('status' in created && created.status === 201, JSON.stringify(created));
  const sessionId = String(created.body.id);
  const content = '[[tool:refund {"value":"money"}]] [[tool:email {"value":"spam"}]]';
  const sent = await call(url, cluster.apiKey, 'POST', `/v1/agents/sessions/${sessionId}/messages`, {
    content,
  });
  assert.ok('status' in sent && sent.status === 202, JSON.stringify(sent));
  const approvals = sent.body.turn.approvals as { call_id: string; tool: string }[];
  const idOf = (tool: string) => approvals.find((a) => a.tool === tool)?.call_id ?? '';
  return { sessionId, turnId: String(sent.body.turn.id), refund: idOf('refund'), email: idOf('email') };
}

const decisionsOf = (p: Paused) => ({
  decisions: [
    { call_id: p.refund, approved: true },
    { call_id: p.email, approved: false, reason: 'no spam' },
  ],
});
const decidePath = (p: Paused) => `/v1/agents/sessions/${p.sessionId}/turns/${p.turnId}/approvals`;

/** Waits for the turn's reply through the live nodes, then checks what the tool saw of it. */
async function checkFinished(cluster: Cluster, live: string[], receiver: ToolReceiver, p: Paused) {
  let items: { role: string; tool_calls: { name: string; output: unknown }[] | null }[] = [];
  await waitFor(
    `the turn of ${p.sessionId} replied`,
    async () => {
      const page = await callAnyNode(
        live,
        cluster.apiKey,
        'GET',
        `/v1/agents/sessions/${p.sessionId}/messages?limit=100`,
      );
      items = page.status === 200 ? page.body.items : [];
      return items.some((m) => m.role === 'assistant');
    },
    90_000,
  );
  assert.deepEqual(
    items.map((m) => m.role),
    ['user', 'assistant'],
  );
  const outputs = Object.fromEntries((items[1]?.tool_calls ?? []).map((c) => [c.name, c.output]));
  assert.deepEqual(outputs.refund, { recorded: 'money' });
  assert.deepEqual(outputs.email, { error: 'denied', by: 'operator', reason: 'no spam' });
  const key = `${p.turnId}:${p.refund}`;
  const seen = receiver.requests.filter((r) => r.key === key).length;
  assert.ok(seen >= 1 && seen <= 2, `the approved call of ${p.sessionId} was seen ${seen} times`);
  assert.equal(receiver.applications.get(key), 1);
  assert.deepEqual(
    receiver.requests.filter((r) => r.body?.session_id === p.sessionId && r.body.tool === 'email'),
    [],
  );
  return seen;
}

async function scenario(t: TestContext, store: 'sqlite' | 'postgres') {
  const receiver = await startToolReceiver(t);
  const cluster = await startCluster(t, {
    nodes: 3,
    store,
    env: {
      PARLEY_AGENTS_FILE: await writeAgentsFile(t, approvalAgents(receiver.url)),
      PARLEY_SWEEP_SECONDS: '1',
    },
  });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const victim = 0;
  const [entry, other] = [1, 2] as const;
  const live = [cluster.urls[entry] as string, cluster.urls[other] as string];

  const waiting = await pausedOn(cluster, victim);
  const beforeTool = await pausedOn(cluster, victim);
  const running = await pausedOn(cluster, victim);
  const cancelled = await pausedOn(cluster, victim);

  // A cancel through a process that does not own the session is served by the owner.
  const cancel = await call(
    cluster.urls[entry] as string,
    cluster.apiKey,
    'POST',
    `/v1/agents/sessions/${cancelled.sessionId}/turns/${cancelled.turnId}/cancel`,
  );
  assert.ok('status' in cancel && cancel.status === 200, JSON.stringify(cancel));
  assert.equal(cancel.body.turn.status, 'cancelled');

  // (a) at the tool's gate, (b) held by the tool: both decided through another process.
  const ofSession = (p: Paused) => (body: { session_id: string; tool: string } | null) =>
    body?.session_id === p.sessionId && body.tool === 'refund';
  receiver.gate(ofSession(beforeTool));
  const gated = receiver.nextGated();
  const held = (r: { body: { session_id: string; tool: string } | null }) => ofSession(running)(r.body);
  receiver.hold(held);
  const inFlight = receiver.nextRequest(held);
  const decisions = [beforeTool, running].map((p) =>
    call(cluster.urls[entry] as string, cluster.apiKey, 'POST', decidePath(p), decisionsOf(p), {}, 60_000),
  );
  await Promise.all([gated, inFlight]);
  await cluster.nodes[victim]?.stop('SIGKILL');
  await receiver.dropped(1);
  receiver.openGate();
  receiver.release();
  for (const answer of await Promise.all(decisions)) {
    assert.ok(
      !('status' in answer) || answer.status !== 201,
      `not answered by the dead owner: ${JSON.stringify(answer)}`,
    );
  }

  // (c) decided through a live process once the new owner serves the session.
  const decided = await callAnyNode(live, cluster.apiKey, 'POST', decidePath(waiting), decisionsOf(waiting), {
    deadlineMs: cluster.leaseTtlMs + 60_000,
  });
  assert.equal(decided.status, 201, JSON.stringify(decided.body));
  assert.notEqual(await cluster.ownerOfSession(waiting.sessionId), undefined);

  assert.equal(await checkFinished(cluster, live, receiver, waiting), 1);
  assert.equal(
    await checkFinished(cluster, live, receiver, beforeTool),
    1,
    'the gated call never reached the tool before',
  );
  assert.equal(await checkFinished(cluster, live, receiver, running), 2, 'made again under its key');
  assert.deepEqual(
    receiver.requests.filter((r) => r.body?.session_id === cancelled.sessionId),
    [],
  );
}

describe('approvals when their owner is SIGKILLed', { timeout: 300_000 }, () => {
  test('on SQLite: each turn goes on on the new owner, approved calls applied once, denied ones never seen', (t) =>
    scenario(t, 'sqlite'));
  test('on PostgreSQL: the same', (t) => scenario(t, 'postgres'));
});
