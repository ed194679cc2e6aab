// Acceptance of the conversation event stream across an ownership move (docs/guides/humans.md#the-conversation-event-stream)
// on three real processes sharing SQLite, with Redis leases: a client follows a session's events through a
// process that is not its owner, the session is handed to people, the owner is SIGKILLed while the stream is
// open, and the conversation goes on through the other processes (still handled by people: the handoff
// survived its owner; then handed back); the client reconnects through another process with Last-Event-ID.
// Every event arrives exactly once (ids 1…n, none missing, none repeated), and every stored message is told
// once as message.created.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { startCluster } from '../helpers/cluster.ts';
import { call, callAnyNode, retryableStatus } from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import { type SseEvent, StreamReader } from '../helpers/sse.ts';

after(killLeftoverChildren);
const dispatcher = new Agent();
after(() => dispatcher.close());

/** The ids of the session's messages as the shared SQLite file holds them, in order. */
function storedMessageIds(sqliteFile: string, sessionId: string): string[] {
  const db = new DatabaseSync(sqliteFile, { readOnly: true });
  try {
    const rows = db.prepare('SELECT id FROM messages WHERE session_id = ? ORDER BY seq').all(sessionId);
    return rows.map((r) => String(r.id));
  } finally {
    db.close();
  }
}

test('a stream of a conversation resumed through another process after its owner was killed loses and repeats no event', {
  timeout: 180_000,
}, async (t) => {
  const cluster = await startCluster(t, { nodes: 3, store: 'sqlite' });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const { urls, apiKey } = cluster;
  const created = await call(
    cluster.urls[0] as string,
    cluster.apiKey,
    'POST',
    '/v1/agents/demo/sessions',
    {},
  );
  assert.ok('status' in created && created.status === 201, JSON.stringify(created));
  const sessionId = String(created.body.id);
  const ownerId = await cluster.ownerOfSession(sessionId);
  assert.ok(ownerId, 'the session lies in a shard with an owner');
  const owner = await cluster.indexOf(ownerId);
  const [entry, other] = [0, 1, 2].filter((i) => i !== owner) as [number, number];
  const path = `/v1/agents/sessions/${sessionId}/events`;
  const send = (text: string, body: object = { content: text }) =>
    callAnyNode(
      [cluster.urls[entry] as string, cluster.urls[other] as string],
      cluster.apiKey,
      'POST',
      `/v1/agents/sessions/${sessionId}/messages`,
      body,
      { deadlineMs: 60_000, headers: { 'idempotency-key': text } },
    );

  /** Opens the stream through `nodes` in turn until one answers 200 (the lease moves meanwhile). */
  async function follow(nodes: number[], lastEventId?: string): Promise<StreamReader> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      const node = nodes[attempt % nodes.length] as number;
      const headers: Record<string, string> = { 'x-api-key': apiKey };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      try {
        const res = await request(`${urls[node]}${path}`, { dispatcher, headers });
        if (res.statusCode === 200) return new StreamReader(res.statusCode, res.headers, res.body);
        await res.body.dump();
        assert.ok(retryableStatus(res.statusCode), `the stream was refused with ${res.statusCode}`);
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
      if (Date.now() > deadline) throw new Error('no stream within 60 s');
      await sleep(100);
    }
  }

  const first = await follow([entry]);
  for (const text of ['one', 'two', 'three']) assert.equal((await send(text)).status, 201);
  // People take over; the handoff is the session's state, which must survive its owner.
  const handoff = await callAnyNode(
    [urls[entry] as string],
    apiKey,
    'POST',
    `/v1/agents/sessions/${sessionId}/handoff`,
    { reason: 'failover' },
  );
  assert.equal(handoff.status, 200);
  // The owner dies while the stream is open, once the stream has told something (what else it has read by
  // then, the kill decides: on a loaded machine the proxy may not have passed a single event on yet).
  await first.until((events) => events.length > 0);
  await cluster.nodes[owner]?.stop('SIGKILL');
  const before: SseEvent[] = await first.all().catch(() => first.events);
  assert.ok(before.length > 0, 'the stream told events before the owner died');

  // On the new owner, people still handle the session: the sends are stored, no model answers.
  for (const text of ['four', 'five']) {
    const stored = await send(text);
    assert.deepEqual([stored.status, stored.body], [201, { agent_message: null, handled_by: 'humans' }]);
  }
  const author = { id: 'op_1', name: 'Ana' };
  assert.equal((await send('reply', { role: 'assistant', content: 'Done.', author })).status, 201);
  const back = await callAnyNode(
    [urls[other] as string, urls[entry] as string],
    apiKey,
    'POST',
    `/v1/agents/sessions/${sessionId}/handback`,
    {},
    { deadlineMs: 60_000 },
  );
  assert.equal(back.status, 200);
  assert.equal((await send('six')).status, 201);

  const lastSeen = before.at(-1)?.id;
  const resumed = await follow([other, entry], lastSeen);
  const stored = storedMessageIds(cluster.sqliteFile, sessionId);
  assert.equal(stored.length, 11, 'four turns of two messages, two sends for people and an operator reply');
  // Four plain turns of five events, the handoff, two sends and a reply of one each, the handback.
  const total = 4 * 5 + 1 + 3 + 1;
  const rest = await resumed.until((events) => before.length + events.length >= total);
  resumed.body.on('error', () => {}).destroy();

  const all = [...before, ...rest];
  assert.deepEqual(
    all.map((e) => Number(e.id)),
    Array.from({ length: total }, (_, i) => i + 1),
    'every id once, in order, none missing',
  );
  assert.deepEqual(
    all.filter((e) => e.event === 'message.created').map((e) => e.data.message?.id),
    stored,
    'every stored message told once, in order',
  );
  assert.deepEqual(
    all.filter((e) => e.event.startsWith('session.')).map((e) => e.event),
    ['session.handoff_requested', 'session.handed_back'],
  );
  assert.equal(all.filter((e) => e.event === 'turn.completed').length, 4);
});
