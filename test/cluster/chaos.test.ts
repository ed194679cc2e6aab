// Acceptance of issue 6, failover: a load of sequence-numbered, idempotent sends over three processes while
// the owner of some shards is SIGKILLed (and restarted), another is SIGSTOPped for twice the lease TTL, and
// Redis itself is restarted empty. Afterwards every acknowledged send must be stored exactly once with
// exactly one reply, in order, and no message may have been committed under a stale fencing epoch
// (docs/internals/architecture.md#sharding-and-ownership). Half of the sessions belong to an agent with a
// key-honouring HTTP tool, and every third send of theirs calls it: each such acknowledged turn's call must
// have taken effect exactly once (docs/internals/decisions.md#the-durable-step-loop). The SIGKILL comes while
// a call of one of the victim's sessions waits for the tool's answer, so that at least one turn is resumed by
// the new owner and its call made again under its key. Beside them, sessions of an agent whose tool calls wait
// for approvals send and decide all along (docs/internals/decisions.md#approvals), one of the victim's turns
// waiting for its decisions at the SIGKILL: no approved call lost, none applied twice, no denied call seen by
// the tool. The lease TTL is 3 s, so that the whole run stays near a minute.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkApprovalTurns, startApprovalLoad } from '../helpers/approval-load.ts';
import { approvalAgents } from '../helpers/approvals.ts';
import { startCluster } from '../helpers/cluster.ts';
import {
  call,
  callAnyNode,
  checkEpochOrder,
  checkSessions,
  checkToolTurns,
  createSessions,
  type Load,
  startLoad,
  summarizeMisses,
} from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import { startToolReceiver, type ToolRequest, toolAgent, writeAgentsFile } from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

after(killLeftoverChildren);

const ttl = 3000;

/** Whether every session has an acknowledgement that arrived after `since`. */
const allAckedSince = (load: Load, sessions: readonly string[], since: number) =>
  sessions.every((s) => (load.acked.get(s)?.at(-1)?.at ?? 0) > since);

test('sends under a SIGKILL, a SIGSTOP and a Redis restart are each stored exactly once, in order, under growing epochs', {
  timeout: 240_000,
}, async (t) => {
  const receiver = await startToolReceiver(t);
  // The built-in demo agent as a file says it, and the tool agent. Their windows are large enough for any
  // history to fit by its bytes alone: no token is counted, as for the built-in demo.
  const agentsFile = await writeAgentsFile(t, [
    {
      id: 'demo',
      name: 'Demo',
      instructions: 'You are a friendly demo agent. Answer briefly.',
      context_window: 1_000_000,
    },
    { ...toolAgent(receiver.url), context_window: 1_000_000 },
    ...approvalAgents(receiver.url).map((agent) => ({ ...agent, context_window: 1_000_000 })),
  ]);
  const cluster = await startCluster(t, {
    nodes: 3,
    store: 'sqlite',
    leaseTtlMs: ttl,
    env: { PARLEY_AGENTS_FILE: agentsFile },
  });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const { urls, apiKey } = cluster;

  const demoSessions = await createSessions(urls, apiKey, 15);
  const toolSessions = await createSessions(urls, apiKey, 15, 'toolbot');
  const sessions = demoSessions.flatMap((s, i) => [s, toolSessions[i] as string]);
  // The victim of the SIGKILL owns a tool session, and a probe session of its own, created through it (so
  // in one of its shards), that the load does not touch: the measure of how soon its sessions are served
  // again.
  const victimId = await cluster.ownerOfSession(toolSessions[0] as string);
  assert.ok(victimId);
  const victim = await cluster.indexOf(victimId);
  assert.ok(victim >= 0, `${victimId} is one of the three`);
  const sleeper = (victim + 1) % 3;
  const probe = await call(urls[victim] as string, apiKey, 'POST', '/v1/agents/demo/sessions', {});
  assert.ok('status' in probe && probe.status === 201, JSON.stringify(probe));
  const probeId = String(probe.body.id);
  assert.equal(await cluster.ownerOfSession(probeId), victimId);
  const victimSessions: string[] = [];
  for (const s of sessions) if ((await cluster.ownerOfSession(s)) === victimId) victimSessions.push(s);
  assert.ok(victimSessions.length > 0, 'the victim owns some of the loaded sessions');

  // Sessions whose turns wait for approvals, created through each node in turn (so two are the victim's), and
  // one of the victim's whose turn waits at the SIGKILL, decided only afterwards.
  const approvalSessions = await createSessions(urls, apiKey, 6, 'shop');
  const pausedAtKill = await call(urls[victim] as string, apiKey, 'POST', '/v1/agents/shop/sessions', {});
  assert.ok('status' in pausedAtKill && pausedAtKill.status === 201, JSON.stringify(pausedAtKill));
  const waitingSession = String(pausedAtKill.body.id);
  const waiting = await call(
    urls[victim] as string,
    apiKey,
    'POST',
    `/v1/agents/sessions/${waitingSession}/messages`,
    {
      content: 'approval 1 [[tool:refund {"value":"at-kill"}]] [[tool:email {"value":"at-kill"}]]',
    },
  );
  assert.ok('status' in waiting && waiting.status === 202, JSON.stringify(waiting));
  const approvalLoad = startApprovalLoad({ urls, apiKey, sessions: approvalSessions });
  t.after(() => approvalLoad.stop());

  const load = startLoad({
    urls,
    apiKey,
    sessions,
    thinkMs: 50,
    requestTimeoutMs: 4_000,
    maxTurns: 400,
    tools: { sessions: new Set(toolSessions), every: 3 },
  });
  t.after(() => load.abort());
  await waitFor('warm-up', () => sessions.every((s) => (load.acked.get(s)?.length ?? 0) >= 3));

  // (a) SIGKILL the victim while the tool holds its answer to a call of the victim's, so that the call is
  // in flight and its turn must be resumed elsewhere; its sessions must be served again within TTL + 2 s.
  // Only the victim's calls are held, and only until the kill: the rest of the load goes on meanwhile.
  const others = [0, 1, 2].filter((i) => i !== victim);
  const ofVictim = (r: ToolRequest) => r.body !== null && victimSessions.includes(r.body.session_id);
  receiver.hold(ofVictim);
  const inFlight = await receiver.nextRequest(ofVictim);
  await cluster.nodes[victim]?.stop('SIGKILL');
  const killedAt = Date.now();
  receiver.release();
  t.diagnostic(`killed while the call ${inFlight.key} of ${inFlight.body?.session_id} was in flight`);
  let served: number | undefined;
  for (let attempt = 0; served === undefined && Date.now() - killedAt < ttl + 10_000; attempt++) {
    const answer = await call(
      urls[others[attempt % 2] as number] as string,
      apiKey,
      'POST',
      `/v1/agents/sessions/${probeId}/messages`,
      { content: 'are you there?' },
      { 'idempotency-key': 'probe' },
      3_000,
    );
    if ('status' in answer && answer.status === 201) served = Date.now() - killedAt;
    else await sleep(50);
  }
  t.diagnostic(`the killed owner's probe session answered again ${served} ms after the SIGKILL`);
  assert.ok(
    served !== undefined && served <= ttl + 2_000,
    `served again after ${served} ms, not ≤ ${ttl + 2000}`,
  );
  await waitFor('the victim’s loaded sessions answer again', () =>
    allAckedSince(load, victimSessions, killedAt),
  );
  const recovered = Math.max(
    ...victimSessions.map((s) => (load.acked.get(s)?.find((a) => a.at > killedAt)?.at ?? 0) - killedAt),
  );
  t.diagnostic(`every loaded session of the killed owner was acknowledged again within ${recovered} ms`);

  // The turn that waited at the SIGKILL, decided through the live processes.
  const waitingTurn = waiting.body.turn as { id: string; approvals: { call_id: string; tool: string }[] };
  const idOf = (tool: string) => waitingTurn.approvals.find((a) => a.tool === tool)?.call_id ?? '';
  const decided = await callAnyNode(
    others.map((i) => urls[i] as string),
    apiKey,
    'POST',
    `/v1/agents/sessions/${waitingSession}/turns/${waitingTurn.id}/approvals`,
    {
      decisions: [
        { call_id: idOf('refund'), approved: true },
        { call_id: idOf('email'), approved: false },
      ],
    },
    { deadlineMs: ttl + 30_000 },
  );
  assert.equal(decided.status, 201, JSON.stringify(decided.body));

  await cluster.restart(victim);
  await cluster.waitUntilSettled();

  // (b) SIGSTOP another process for twice the TTL: its leases expire under it, and when it wakes it must
  // notice (monotonic clock) that it lost them, before writing anything.
  cluster.pause(sleeper);
  await sleep(2 * ttl);
  cluster.resume(sleeper);
  await cluster.waitUntilSettled();
  assert.equal(cluster.nodes[sleeper]?.child.exitCode, null, 'the paused process survived its pause');

  // (c) Redis dies and comes back empty: every lease and membership is gone at once.
  await cluster.redis.restart({ signal: 'SIGKILL', downMs: 1_000 });
  const redisBackAt = Date.now();
  await cluster.waitUntilSettled();
  await waitFor('every session answers after the Redis restart', () =>
    allAckedSince(load, sessions, redisBackAt),
  );

  const result = await load.stop();
  const approvals = await approvalLoad.stop();
  t.diagnostic(`${approvals.acked.length} approval turns decided, ${approvals.retries} requests sent again`);
  // A failure names what the nodes logged at error level, so that a 500 shows its cause.
  const errorLogs = () =>
    cluster.nodes
      .flatMap((node) => node.logs().filter((line) => Number(line.level) >= 50))
      .map((line) => JSON.stringify(line).slice(0, 2000));
  assert.deepEqual(approvals.failures, [], errorLogs().join('\n'));
  assert.ok(approvals.acked.length >= approvalSessions.length, 'every approval session decided turns');
  const approvalProblems = await checkApprovalTurns(
    urls,
    apiKey,
    [
      ...approvals.acked,
      {
        session: waitingSession,
        seq: 1,
        turnId: waitingTurn.id,
        refund: idOf('refund'),
        replyId: decided.body.agent_message.id,
      },
    ],
    [...approvalSessions, waitingSession],
    receiver,
  );
  assert.deepEqual(approvalProblems, [], approvalProblems.slice(0, 20).join('\n'));
  const keys = receiver.applications.size;
  t.diagnostic(
    `${result.attempts} attempts, ${[...result.acked.values()].reduce((n, a) => n + a.length, 0)} acknowledged; ` +
      `misses: ${summarizeMisses(result.misses)}; the tool got ${receiver.requests.length} calls under ${keys} keys`,
  );
  assert.deepEqual(
    result.misses.filter((m) => !m.retried),
    [],
    'no send was given up or refused for good',
  );
  for (const i of [0, 1, 2]) assert.ok(cluster.isUp(i), `node ${i} is still up`);

  const problems = await checkSessions(urls, apiKey, result, sessions);
  assert.deepEqual(problems, [], problems.slice(0, 20).join('\n'));
  const epochs = checkEpochOrder(cluster.sqliteFile);
  assert.deepEqual(epochs, [], epochs.slice(0, 20).join('\n'));
  const toolTurns = checkToolTurns(result, receiver, cluster.sqliteFile);
  assert.deepEqual(toolTurns, [], toolTurns.slice(0, 20).join('\n'));
  assert.ok(
    receiver.requests.length > keys,
    `some call was made again under its key after the SIGKILL (${receiver.requests.length} calls under ${keys} keys)`,
  );
  assert.ok(
    receiver.requests.filter((r) => r.key === inFlight.key).length >= 2,
    `the call in flight at the SIGKILL, ${inFlight.key}, was made again`,
  );
});
