// Acceptance of issue 17 (docs/internals/decisions.md#the-durable-step-loop, durable step loop): a tool call
// in flight when the owner of its session is SIGKILLed. The send is retried under its Idempotency-Key through
// another process, the new owner resumes the turn from what was committed and calls the tool again under the
// same key, so a tool that honours the key takes effect once, and the turn is stored once with its one tool
// call. And of a step's two parallel calls, the one whose result was committed before the SIGKILL is not
// called again: only the other is.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { after, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Cluster, startCluster } from '../helpers/cluster.ts';
import { type Answer, call, readMessages, retryableStatus } from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import {
  inputValue,
  recordDirective,
  recordedOutput,
  startToolReceiver,
  type ToolReceiver,
  type ToolRequest,
  toolAgent,
  writeAgentsFile,
} from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

after(killLeftoverChildren);

interface StoredCall {
  turn_id: string;
  id: string;
  name: string;
  status: string | null;
  output: string | null;
}

interface StoredMessage {
  id: string;
  role: string;
  turn_id: string;
  tool_calls: string | null;
}

/** The session's rows of `tool_calls` and `messages`, read from the shared file while the processes run. */
function storedTurn(sqliteFile: string, sessionId: string) {
  const db = new DatabaseSync(sqliteFile, { readOnly: true });
  try {
    return {
      calls: db
        .prepare(
          'SELECT turn_id, id, name, status, output FROM tool_calls WHERE session_id = ? ORDER BY rowid',
        )
        .all(sessionId) as unknown as StoredCall[],
      messages: db
        .prepare('SELECT id, role, turn_id, tool_calls FROM messages WHERE session_id = ? ORDER BY rowid')
        .all(sessionId) as unknown as StoredMessage[],
    };
  } finally {
    db.close();
  }
}

/**
 * Three processes whose agent `toolbot` calls `receiver`, and a session of it; the index of its owner, of
 * a process the test enters through (which forwards to the owner), and of the third one. Null when the
 * cluster cannot start here (the test was skipped).
 */
async function toolCluster(t: TestContext, receiver: ToolReceiver) {
  const cluster = await startCluster(t, {
    nodes: 3,
    store: 'sqlite',
    env: { PARLEY_AGENTS_FILE: await writeAgentsFile(t, [toolAgent(receiver.url)]) },
  });
  if (!cluster) return null;
  await cluster.waitUntilSettled();
  const created = await call(
    cluster.urls[0] as string,
    cluster.apiKey,
    'POST',
    '/v1/agents/toolbot/sessions',
    {},
  );
  assert.ok('status' in created && created.status === 201, JSON.stringify(created));
  const sessionId = String(created.body.id);
  const ownerId = await cluster.ownerOfSession(sessionId);
  assert.ok(ownerId, 'the session lies in a shard with an owner');
  const owner = await cluster.indexOf(ownerId);
  assert.ok(owner >= 0, `${ownerId} is one of the three`);
  const [entry, other] = [0, 1, 2].filter((i) => i !== owner) as [number, number];
  return { cluster, sessionId, ownerId, owner, entry, other };
}

/**
 * Sends through `nodes` in turn until an answer that is not a process going away (503 while the lease moves,
 * 502/504 from a forward to the dead owner, no answer at all); throws after `deadlineMs`.
 */
async function sendUntilAnswered(
  cluster: Cluster,
  nodes: readonly number[],
  path: string,
  body: unknown,
  key: string,
  deadlineMs: number,
): Promise<{ answer: Answer; misses: string[] }> {
  const deadline = Date.now() + deadlineMs;
  const misses: string[] = [];
  for (let attempt = 0; ; attempt++) {
    const node = nodes[attempt % nodes.length] as number;
    // Long enough for a turn whose tool call the receiver holds.
    const answer = await call(
      cluster.urls[node] as string,
      cluster.apiKey,
      'POST',
      path,
      body,
      { 'idempotency-key': key },
      30_000,
    );
    if ('status' in answer && !retryableStatus(answer.status)) return { answer, misses };
    misses.push(
      'status' in answer ? `${answer.status} ${answer.body?.error?.code ?? ''}`.trim() : answer.error,
    );
    if (Date.now() > deadline) throw new Error(`no answer within ${deadlineMs} ms: ${misses.join(', ')}`);
    await sleep(100);
  }
}

/**
 * SIGKILLs the owner while its tool call is held (the first attempt must not have been answered 201), retries
 * the same send through the live processes, and checks that the new owner makes the held call (`match`) again
 * before the retry is answered; then lets the tool answer.
 */
async function killAndResume<A>(
  t: TestContext,
  o: {
    cluster: Cluster;
    receiver: ToolReceiver;
    owner: number;
    first: Promise<A>;
    retry: () => Promise<{ answer: Answer; misses: string[] }>;
    called: string;
    match?: (request: ToolRequest) => boolean;
  },
) {
  await o.cluster.nodes[o.owner]?.stop('SIGKILL');
  const firstAnswer = await o.first;
  assert.ok(
    !(typeof firstAnswer === 'object' && firstAnswer !== null && 'status' in firstAnswer) ||
      firstAnswer.status !== 201,
    `the attempt whose owner died was not answered 201: ${JSON.stringify(firstAnswer)}`,
  );
  // The same send, retried until a live process serves it (the lease expires meanwhile).
  const killedAt = Date.now();
  const again = o.receiver.nextRequest(o.match);
  const retried = o.retry();
  const came = await Promise.race([
    again.then(() => o.called),
    retried.then(({ answer }) => `the retry was answered ${answer.status}: ${JSON.stringify(answer.body)}`),
  ]);
  assert.equal(came, o.called, 'the resumed turn calls the tool before it answers');
  t.diagnostic(`${o.called} ${(await again).at - killedAt} ms after the SIGKILL`);
  o.receiver.release();
  return { firstAnswer, retried, again: await again };
}

test('a tool call in flight when its owner is SIGKILLed is made again under the same Idempotency-Key, takes effect once, and its turn is stored once', {
  timeout: 180_000,
}, async (t) => {
  const receiver = await startToolReceiver(t);
  const started = await toolCluster(t, receiver);
  if (!started) return;
  const { cluster, sessionId, ownerId, owner, entry, other } = started;
  const { urls, apiKey } = cluster;

  // The first attempt goes through a process that forwards it to the owner; the tool holds its answer.
  receiver.hold();
  const firstCall = receiver.nextRequest();
  const path = `/v1/agents/sessions/${sessionId}/messages`;
  const send = { content: `Please keep this. ${recordDirective('v1')}` };
  const key = 'tool-failover-1';
  const first = call(urls[entry] as string, apiKey, 'POST', path, send, { 'idempotency-key': key }, 30_000);
  const called = await firstCall;
  assert.ok(called.body, called.raw);
  assert.equal(called.key, `${called.body.turn_id}:${called.body.call_id}`);
  assert.deepEqual(called.body.input, { value: 'v1' });

  // The call reached the tool, so it was committed first: stored without a result.
  const before = storedTurn(cluster.sqliteFile, sessionId);
  assert.deepEqual(
    before.calls.map((c) => [c.turn_id, c.id, c.status]),
    [[called.body.turn_id, called.body.call_id, null]],
    'the call is committed, its result is not',
  );
  assert.deepEqual(
    before.messages.map((m) => m.role),
    ['user'],
  );

  const { firstAnswer, retried, again } = await killAndResume(t, {
    cluster,
    receiver,
    owner,
    first,
    retry: () => sendUntilAnswered(cluster, [other, entry], path, send, key, cluster.leaseTtlMs + 30_000),
    called: 'the tool was called again',
  });

  const { answer, misses } = await retried;
  const counts = new Map<string, number>();
  for (const miss of misses) counts.set(miss, (counts.get(miss) ?? 0) + 1);
  t.diagnostic(
    `the first attempt got ${'status' in firstAnswer ? `${firstAnswer.status} ${firstAnswer.body?.error?.code}` : firstAnswer.error}; the retry was ` +
      `answered after ${[...counts].map(([miss, n]) => `${miss} ×${n}`).join(', ') || 'no miss'}`,
  );
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  assert.notEqual(answer.node, ownerId, 'a live process answered');
  assert.equal(answer.headers['idempotent-replayed'], undefined, 'the turn was finished now, not replayed');
  const reply = answer.body.agent_message;
  const text = String(reply.content[0]?.text);
  assert.ok(
    text.endsWith(`Tools: record ok ${JSON.stringify(recordedOutput('v1'))}.`),
    `the reply ends the turn with the tool's result: ${text}`,
  );
  assert.deepEqual(
    reply.tool_calls.map((c: { id: string; name: string; status: string; output: unknown }) => [
      c.id,
      c.name,
      c.status,
      c.output,
    ]),
    [[called.body.call_id, 'record', 'ok', recordedOutput('v1')]],
  );

  // The tool saw one call, twice: the same key, applied once.
  assert.equal(receiver.requests.length, 2, JSON.stringify(receiver.requests));
  assert.deepEqual(
    receiver.requests.map((r) => r.key),
    [called.key, called.key],
  );
  assert.deepEqual(again.body, called.body, 'the call is made again as it was first made');
  assert.deepEqual([...receiver.applications], [[called.key, 1]]);

  // Stored once: one user message, one reply, one tool call with its one result.
  const stored = storedTurn(cluster.sqliteFile, sessionId);
  assert.deepEqual(
    stored.calls.map((c) => [c.turn_id, c.id, c.name, c.status, c.output && JSON.parse(c.output)]),
    [[called.body.turn_id, called.body.call_id, 'record', 'ok', recordedOutput('v1')]],
  );
  assert.deepEqual(
    stored.messages.map((m) => [m.role, m.turn_id]),
    [
      ['user', called.body.turn_id],
      ['assistant', called.body.turn_id],
    ],
  );
  assert.equal(stored.messages[1]?.id, reply.id);
  assert.equal(JSON.parse(stored.messages[1]?.tool_calls ?? 'null')?.length, 1);

  const live = [entry, other].map((i) => urls[i] as string);
  const listed = await readMessages(live, apiKey, sessionId);
  assert.deepEqual(
    listed.map((m) => m.role),
    ['user', 'assistant'],
  );
  assert.equal(listed[0]?.text, send.content);
  assert.equal(listed[1]?.id, reply.id);
  assert.deepEqual(
    listed[1]?.toolCalls?.map((c) => [c.id, c.status]),
    [[called.body.call_id, 'ok']],
  );

  // And the same send once more replays the stored answer: no third call.
  const replay = await call(urls[entry] as string, apiKey, 'POST', path, send, { 'idempotency-key': key });
  assert.ok('status' in replay && replay.status === 201, JSON.stringify(replay));
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.deepEqual(replay.body.agent_message, reply);
  assert.equal(receiver.requests.length, 2);
});

test('of two parallel calls, the one whose result was stored before its owner was SIGKILLed is not made again; the other is, under its key', {
  timeout: 180_000,
}, async (t) => {
  const receiver = await startToolReceiver(t);
  const started = await toolCluster(t, receiver);
  if (!started) return;
  const { cluster, sessionId, ownerId, owner, entry, other } = started;
  const { urls, apiKey } = cluster;

  // One step asks for both calls; the tool answers "a" at once and holds its answer to "b".
  const of = (value: string) => (r: ToolRequest) => inputValue(r.body?.input) === value;
  receiver.hold(of('b'));
  const callA = receiver.nextRequest(of('a'));
  const callB = receiver.nextRequest(of('b'));
  const path = `/v1/agents/sessions/${sessionId}/messages`;
  const send = { content: `Keep both. ${recordDirective('a')} ${recordDirective('b')}` };
  const key = 'tool-failover-2';
  const first = call(urls[entry] as string, apiKey, 'POST', path, send, { 'idempotency-key': key }, 30_000);
  const [a, b] = await Promise.all([callA, callB]);
  assert.ok(a.body && b.body, `${a.raw} ${b.raw}`);
  assert.equal(a.body.turn_id, b.body.turn_id, 'one turn');
  assert.notEqual(a.key, b.key);
  const turnId = a.body.turn_id;

  // The owner commits the result of "a" when it arrives; "b" is committed without one, as it waits.
  await waitFor('the result of "a" is committed', () =>
    storedTurn(cluster.sqliteFile, sessionId).calls.some(
      (c) => c.id === a.body?.call_id && c.status !== null,
    ),
  );
  const before = storedTurn(cluster.sqliteFile, sessionId);
  assert.deepEqual(
    before.calls.map((c) => [c.turn_id, c.id, c.status, c.output && JSON.parse(c.output)]),
    [
      [turnId, a.body.call_id, 'ok', recordedOutput('a')],
      [turnId, b.body.call_id, null, null],
    ],
    'both calls are committed, and only the result of "a"',
  );
  assert.deepEqual(
    before.messages.map((m) => m.role),
    ['user'],
  );

  // The new owner makes the call of "b" again (still held), not "a".
  const { retried, again } = await killAndResume(t, {
    cluster,
    receiver,
    owner,
    first,
    retry: () => sendUntilAnswered(cluster, [other, entry], path, send, key, cluster.leaseTtlMs + 30_000),
    called: 'the tool was called again for "b"',
    match: of('b'),
  });

  const { answer } = await retried;
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  assert.notEqual(answer.node, ownerId, 'a live process answered');
  const reply = answer.body.agent_message;
  const text = String(reply.content[0]?.text);
  assert.ok(
    text.endsWith(
      `Tools: record ok ${JSON.stringify(recordedOutput('a'))}; record ok ${JSON.stringify(recordedOutput('b'))}.`,
    ),
    `the reply ends the turn with both results: ${text}`,
  );
  assert.deepEqual(
    reply.tool_calls.map((c: { id: string; name: string; status: string; output: unknown }) => [
      c.id,
      c.name,
      c.status,
      c.output,
    ]),
    [
      [a.body.call_id, 'record', 'ok', recordedOutput('a')],
      [b.body.call_id, 'record', 'ok', recordedOutput('b')],
    ],
  );

  // The key of "a" came once, the key of "b" twice; each took effect once.
  const seen = (k: string) => receiver.requests.filter((r) => r.key === k).length;
  assert.equal(seen(a.key), 1, `"a" was not called again: ${JSON.stringify(receiver.requests)}`);
  assert.equal(seen(b.key), 2, `"b" was called again under its key: ${JSON.stringify(receiver.requests)}`);
  assert.equal(receiver.requests.length, 3);
  assert.deepEqual(again.body, b.body, 'the call of "b" is made again as it was first made');
  assert.deepEqual(
    new Map(receiver.applications),
    new Map([
      [a.key, 1],
      [b.key, 1],
    ]),
  );

  // Stored once: one user message, one reply, two tool calls with their one result each.
  const stored = storedTurn(cluster.sqliteFile, sessionId);
  assert.deepEqual(
    stored.calls.map((c) => [c.turn_id, c.id, c.name, c.status, c.output && JSON.parse(c.output)]),
    [
      [turnId, a.body.call_id, 'record', 'ok', recordedOutput('a')],
      [turnId, b.body.call_id, 'record', 'ok', recordedOutput('b')],
    ],
  );
  assert.deepEqual(
    stored.messages.map((m) => [m.role, m.turn_id]),
    [
      ['user', turnId],
      ['assistant', turnId],
    ],
  );
  assert.equal(stored.messages[1]?.id, reply.id);
  assert.equal(JSON.parse(stored.messages[1]?.tool_calls ?? 'null')?.length, 2);

  // The same send once more replays the stored answer: no further call.
  const replay = await call(urls[entry] as string, apiKey, 'POST', path, send, { 'idempotency-key': key });
  assert.ok('status' in replay && replay.status === 201, JSON.stringify(replay));
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.deepEqual(replay.body.agent_message, reply);
  assert.equal(receiver.requests.length, 3);
});
