// Acceptance of issue 18 (resume, docs/guides/streaming.md#resuming-a-dropped-stream) on three real processes
// sharing SQLite, with Redis leases: a client drops a stream after its third event, the owner of the session
// is SIGKILLed, and the client resumes with Last-Event-ID through another process. When the turn had finished
// before the kill, the new owner replays exactly the remaining events from the store; when the owner died
// mid-turn, the resumed stream tells the turn's outcome (turn_interrupted) and the same send under the same
// Idempotency-Key finishes that turn.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { after, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { type Cluster, startCluster } from '../helpers/cluster.ts';
import { call, retryableStatus } from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import { parseSse, placesOf, type SseEvent, StreamReader, seqOf } from '../helpers/sse.ts';
import { writeAgentsFile } from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

after(killLeftoverChildren);
const dispatcher = new Agent();
after(() => dispatcher.close());

/** 20 ms a word: a reply of eighty words takes well over a second, so the owner can die in the middle. */
const slowAgent = { id: 'slow', provider: 'scripted', scripted: { token_delay_ms: 20 } };
const longText = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');

/** The session's messages as the shared SQLite file holds them, read while the processes run. */
function storedMessages(sqliteFile: string, sessionId: string) {
  const db = new DatabaseSync(sqliteFile, { readOnly: true });
  try {
    return db
      .prepare('SELECT id, role, turn_id FROM messages WHERE session_id = ? ORDER BY seq')
      .all(sessionId) as unknown as { id: string; role: string; turn_id: string }[];
  } finally {
    db.close();
  }
}

/** Three processes, a session of the slow agent; its owner's index and the two others'. */
async function resumeCluster(t: TestContext) {
  const cluster = await startCluster(t, {
    nodes: 3,
    store: 'sqlite',
    env: { PARLEY_AGENTS_FILE: await writeAgentsFile(t, [slowAgent]) },
  });
  if (!cluster) return null;
  await cluster.waitUntilSettled();
  const created = await call(
    cluster.urls[0] as string,
    cluster.apiKey,
    'POST',
    '/v1/agents/slow/sessions',
    {},
  );
  assert.ok('status' in created && created.status === 201, JSON.stringify(created));
  const sessionId = String(created.body.id);
  const ownerId = await cluster.ownerOfSession(sessionId);
  assert.ok(ownerId, 'the session lies in a shard with an owner');
  const owner = await cluster.indexOf(ownerId);
  const [entry, other] = [0, 1, 2].filter((i) => i !== owner) as [number, number];
  return { cluster, sessionId, owner, entry, other };
}

/** A streamed send through `node`, read until its third event, then dropped; those three events. */
async function firstThree(cluster: Cluster, node: number, sessionId: string, key: string) {
  const res = await request(`${cluster.urls[node]}/v1/agents/sessions/${sessionId}/messages/stream`, {
    method: 'POST',
    dispatcher,
    headers: { 'x-api-key': cluster.apiKey, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ content: longText }),
  });
  assert.equal(res.statusCode, 200);
  const reader = new StreamReader(res.statusCode, res.headers, res.body);
  const prefix = (await reader.until((events) => events.length >= 3)).slice(0, 3);
  reader.body.destroy();
  assert.equal(prefix[0]?.event, 'turn.started');
  assert.deepEqual(
    prefix.slice(1).map((e) => e.event),
    ['message.delta', 'message.delta'],
  );
  return prefix;
}

/** GETs a resume through the live nodes in turn until one answers it (the lease moves meanwhile). */
async function resumeThrough(cluster: Cluster, nodes: number[], path: string, lastEventId?: string) {
  const deadline = Date.now() + 60_000;
  const misses: string[] = [];
  for (let attempt = 0; ; attempt++) {
    const node = nodes[attempt % nodes.length] as number;
    const answer = await call(
      cluster.urls[node] as string,
      cluster.apiKey,
      'GET',
      path,
      undefined,
      lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
      30_000,
    );
    if ('status' in answer && !retryableStatus(answer.status)) {
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return parseSse(String(answer.body ?? '')).events;
    }
    misses.push('status' in answer ? String(answer.status) : answer.error);
    if (Date.now() > deadline) throw new Error(`no resume within 60 s: ${misses.join(', ')}`);
    await sleep(100);
  }
}

test('a client that dropped its stream after the third event resumes through another process after the owner was killed, and gets exactly the remaining events', {
  timeout: 180_000,
}, async (t) => {
  const started = await resumeCluster(t);
  if (!started) return;
  const { cluster, sessionId, owner, entry, other } = started;
  const prefix = await firstThree(cluster, entry, sessionId, 'resume-after-kill-1');
  const turnId = String(prefix[0]?.data.turn_id);

  // The turn does not depend on the client: the owner finishes and stores it, and then dies.
  await waitFor(
    'the reply is stored',
    () =>
      storedMessages(cluster.sqliteFile, sessionId).some(
        (m) => m.role === 'assistant' && m.turn_id === turnId,
      ),
    60_000,
  );
  await cluster.nodes[owner]?.stop('SIGKILL');

  const path = `/v1/agents/sessions/${sessionId}/turns/${turnId}/events`;
  const rest = await resumeThrough(cluster, [other, entry], path, String(prefix[2]?.id));
  const full = await resumeThrough(cluster, [entry, other], path);
  assert.equal(full[0]?.event, 'turn.started');
  assert.equal(full.at(-1)?.event, 'turn.completed');
  const last = seqOf(prefix[2] as SseEvent);
  assert.ok(
    rest.every((e) => seqOf(e) > last),
    'nothing the client had is sent again',
  );
  const seen = placesOf(prefix);
  const remaining = placesOf(rest);
  for (const place of remaining.keys()) assert.ok(!seen.has(place), `place ${place} is told once`);
  assert.deepEqual(new Map([...seen, ...remaining]), placesOf(full), 'and nothing is missing');
  const text = rest
    .concat(prefix)
    .filter((e) => e.event === 'message.delta')
    .sort((a, b) => seqOf(a) - seqOf(b))
    .map((e) => e.data.delta?.text)
    .join('');
  const completed = rest.find((e) => e.event === 'message.completed');
  assert.deepEqual(
    completed?.data.message?.content,
    [{ type: 'text', text }],
    'the deltas make the stored reply',
  );
});

test('when the owner is killed mid-turn, the resumed stream tells turn_interrupted through another process, and the same send under the same Idempotency-Key finishes that turn once', {
  timeout: 180_000,
}, async (t) => {
  const started = await resumeCluster(t);
  if (!started) return;
  const { cluster, sessionId, owner, entry, other } = started;
  const key = 'resume-mid-turn-1';
  const prefix = await firstThree(cluster, entry, sessionId, key);
  const turnId = String(prefix[0]?.data.turn_id);
  await cluster.nodes[owner]?.stop('SIGKILL');
  const stored = storedMessages(cluster.sqliteFile, sessionId);
  assert.deepEqual(
    stored.map((m) => m.role),
    ['user'],
    'the owner died before the reply was stored',
  );

  const path = `/v1/agents/sessions/${sessionId}/turns/${turnId}/events`;
  const rest = await resumeThrough(cluster, [other, entry], path, String(prefix[2]?.id));
  assert.deepEqual(
    rest.map((e) => [e.event, e.data.error?.code, e.data.partial]),
    [['turn.failed', 'turn_interrupted', true]],
  );
  assert.ok(seqOf(rest[0] as SseEvent) > seqOf(prefix[2] as SseEvent), 'its id follows the last one seen');

  // The client sends the same message again under its key: the same turn goes on, and is stored once.
  const deadline = Date.now() + 60_000;
  let again: SseEvent[] = [];
  for (let attempt = 0; ; attempt++) {
    const node = [other, entry][attempt % 2] as number;
    const answer = await call(
      cluster.urls[node] as string,
      cluster.apiKey,
      'POST',
      `/v1/agents/sessions/${sessionId}/messages/stream`,
      { content: longText },
      { 'idempotency-key': key },
      30_000,
    );
    if ('status' in answer && answer.status === 200) {
      again = parseSse(String(answer.body)).events;
      break;
    }
    assert.ok(!('status' in answer) || retryableStatus(answer.status), JSON.stringify(answer));
    if (Date.now() > deadline) throw new Error('the send was not answered within 60 s');
    await sleep(100);
  }
  assert.equal(again[0]?.event, 'turn.started');
  assert.equal(again[0]?.data.turn_id, turnId, 'the same turn');
  assert.equal(again.at(-1)?.event, 'turn.completed');
  const messages = storedMessages(cluster.sqliteFile, sessionId);
  assert.deepEqual(
    messages.map((m) => [m.role, m.turn_id]),
    [
      ['user', turnId],
      ['assistant', turnId],
    ],
  );
  // Now finished, the turn replays whole through any process.
  const replay = await resumeThrough(cluster, [entry, other], path, String(prefix[2]?.id));
  assert.equal(replay.at(-1)?.event, 'turn.completed');
});
