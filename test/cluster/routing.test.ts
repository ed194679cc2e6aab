// Acceptance of issue 6, routing: several real processes on one Redis and one store, where any process
// accepts any request and the owner of the session's shard serves it
// (docs/internals/architecture.md#forwarding). Checks who answered through `x-parley-node`, and that
// forwarding changes nothing a client can see: JSON, event streams and multipart uploads read the same
// through any process.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Cluster, startCluster } from '../helpers/cluster.ts';
import { type Answer, call } from '../helpers/load.ts';
import { encodeForm, fileForm, tinyPng } from '../helpers/multipart.ts';
import { killLeftoverChildren, tempDir } from '../helpers/process.ts';
import { parseSse, type SseEvent } from '../helpers/sse.ts';

after(killLeftoverChildren);

/** One call that must get an HTTP answer (a missing one fails the test with its reason). */
async function must(
  cluster: Cluster,
  node: number,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
  apiKey = cluster.apiKey,
): Promise<Answer> {
  const answer = await call(cluster.urls[node] as string, apiKey, method, path, body, headers);
  if ('error' in answer)
    assert.fail(`${method} ${path} on node ${node}: ${answer.error} (${answer.message})`);
  return answer;
}

/** Asserts the status; returns the body. */
function expect(answer: Answer, status: number) {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  return answer.body;
}

/** Creates a `demo` session through node `node`; returns its id and the node that answered. */
async function createSession(cluster: Cluster, node: number) {
  const created = await must(cluster, node, 'POST', '/v1/agents/demo/sessions', { context: { plan: 'pro' } });
  return { id: String(expect(created, 201).id), node: created.node };
}

/** A streamed send: the answer and its events (the stream ends after the turn). */
async function stream(cluster: Cluster, node: number, sessionId: string, text: string, key: string) {
  const answer = await must(
    cluster,
    node,
    'POST',
    `/v1/agents/sessions/${sessionId}/messages/stream`,
    { content: text },
    { 'idempotency-key': key },
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.match(String(answer.headers['content-type']), /^text\/event-stream/);
  return { answer, events: parseSse(String(answer.body)).events };
}

/**
 * An event with what differs from turn to turn (ids, timestamps, the session) replaced by its name, so
 * that two turns with the same text compare equal when their events are the same in kind, order and shape.
 */
function normalize(event: SseEvent) {
  const varying = new Set(['turn_id', 'session_id', 'message_id', 'id', 'created_at']);
  return {
    event: event.event,
    id: event.id?.replace(event.data.turn_id, '<turn_id>'),
    data: JSON.parse(JSON.stringify(event.data, (key, value) => (varying.has(key) ? `<${key}>` : value))),
  };
}

/** The metric's samples summed, by the value of one label. */
async function countsBy(url: string, metric: string, label: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${metric}\\{[^}]*${label}="([^"]+)"[^}]*\\} (\\d+)`, 'gm'))) {
    counts[m[1] as string] = (counts[m[1] as string] ?? 0) + Number(m[2]);
  }
  return counts;
}

/** The built-in `demo` agent, and `slow`, whose turns take seconds. */
async function agentsFile(t: Parameters<typeof tempDir>[0]): Promise<string> {
  const file = join(await tempDir(t, 'parley-routing-agents-'), 'agents.yaml');
  await writeFile(
    file,
    [
      'agents:',
      '  - id: demo',
      '    name: Demo',
      '    instructions: You are a friendly demo agent. Answer briefly.',
      '  - id: slow',
      '    scripted:',
      '      token_delay_ms: 300',
      '',
    ].join('\n'),
  );
  return file;
}

test('three processes sharing one SQLite file route every session request to its owner', {
  timeout: 120_000,
}, async (t) => {
  const cluster = await startCluster(t, { nodes: 3, store: 'sqlite' });
  if (!cluster) return;
  await cluster.waitUntilSettled();

  await t.test(
    'a session created through A and messaged through B and C is served by its one owner, and every process reads the same',
    async () => {
      const session = await createSession(cluster, 0);
      const owner = await cluster.ownerOfSession(session.id);
      assert.ok(owner, 'the new session lies in a shard with an owner');
      assert.equal(session.node, owner, 'the creating process answered, from a shard of its own');
      assert.equal(await cluster.indexOf(owner), 0, 'A created the session in a shard A owns');

      const nodesSeen: Array<string | undefined> = [];
      for (const node of [1, 2]) {
        const sent = await must(
          cluster,
          node,
          'POST',
          `/v1/agents/sessions/${session.id}/messages`,
          { content: `through ${node}` },
          { 'idempotency-key': `plain-${node}` },
        );
        assert.equal(
          expect(sent, 201).agent_message.content[0].text,
          `Hello! You said: "through ${node}". Context: plan: "pro".`,
        );
        nodesSeen.push(sent.node);
        const streamed = await stream(
          cluster,
          node,
          session.id,
          `streamed through ${node}`,
          `stream-${node}`,
        );
        assert.equal(streamed.events.at(-1)?.event, 'turn.completed', streamed.answer.body);
        nodesSeen.push(streamed.answer.node);
      }
      assert.deepEqual(nodesSeen, [owner, owner, owner, owner], 'every send was served by the owner');

      const reads = await Promise.all(
        [0, 1, 2].map(async (node) => ({
          session: await must(cluster, node, 'GET', `/v1/agents/sessions/${session.id}`),
          messages: await must(cluster, node, 'GET', `/v1/agents/sessions/${session.id}/messages?limit=100`),
        })),
      );
      for (const read of reads) {
        assert.equal(read.session.node, owner);
        assert.equal(read.messages.node, owner);
        assert.deepEqual(
          expect(read.session, 200),
          reads[0]?.session.body,
          'the session reads the same everywhere',
        );
        assert.deepEqual(
          expect(read.messages, 200),
          reads[0]?.messages.body,
          'the messages read the same everywhere',
        );
      }
      const items = reads[0]?.messages.body.items as Array<{ id: string; role: string }>;
      assert.equal(items.length, 8);
      assert.equal(reads[0]?.session.body.messages_count, 8);
      assert.deepEqual(
        items.map((m) => m.role),
        ['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant'],
      );

      const one = items[3];
      assert.ok(one);
      for (const node of [0, 1, 2]) {
        const read = await must(cluster, node, 'GET', `/v1/agents/sessions/${session.id}/messages/${one.id}`);
        assert.deepEqual(expect(read, 200), one);
        assert.equal(read.node, owner);
      }
    },
  );

  await t.test(
    'a stream forwarded through a non-owner delivers the same events as a direct one',
    async () => {
      // Two sessions of A, the same text: one streamed through A itself, one through B.
      const direct = await createSession(cluster, 0);
      const forwarded = await createSession(cluster, 0);
      const text = 'tell me about the weather in a few words';
      const a = await stream(cluster, 0, direct.id, text, 'same-events');
      const b = await stream(cluster, 1, forwarded.id, text, 'same-events');
      assert.equal(b.answer.node, direct.node, 'the owner produced the forwarded stream');

      assert.deepEqual(b.events.map(normalize), a.events.map(normalize));
      assert.deepEqual(
        b.events.map((e) => e.event),
        [
          'turn.started',
          ...b.events.filter((e) => e.event === 'message.delta').map(() => 'message.delta'),
          'message.completed',
          'turn.completed',
        ],
      );
      for (const { events } of [a, b]) {
        const turnId = events[0]?.data.turn_id;
        assert.ok(turnId);
        const seqs = events.map((e) => {
          const match = /^(.+):(\d+)$/.exec(e.id ?? '');
          assert.ok(match && match[1] === turnId, `event id ${e.id} is <turn_id>:<seq>`);
          return Number(match[2]);
        });
        assert.deepEqual(
          seqs,
          [...seqs].sort((x, y) => x - y),
          'ids grow',
        );
        const deltas = events.flatMap((e) => (e.event === 'message.delta' ? [e.data.delta?.text ?? ''] : []));
        const completed = events.find((e) => e.event === 'message.completed')?.data.message;
        assert.equal(
          deltas.join(''),
          completed?.content[0]?.type === 'text' ? completed.content[0].text : undefined,
        );
      }

      // The completed message is the stored one, read through a third process.
      const completed = b.events.find((e) => e.event === 'message.completed')?.data.message;
      assert.ok(completed);
      const stored = await must(
        cluster,
        2,
        'GET',
        `/v1/agents/sessions/${forwarded.id}/messages/${completed.id}`,
      );
      assert.deepEqual(expect(stored, 200), completed);

      // The same streamed send retried through a third process replays the turn
      // (docs/internals/decisions.md#idempotency-key): the same turn, user message and completed message,
      // under the same event ids.
      const replay = await stream(cluster, 2, forwarded.id, text, 'same-events');
      assert.equal(replay.answer.headers['idempotent-replayed'], 'true');
      assert.equal(replay.answer.node, direct.node);
      assert.deepEqual(replay.events[0], b.events[0]);
      assert.deepEqual(replay.events.at(-2), b.events.at(-2));
      assert.equal(replay.events.at(-1)?.id, b.events.at(-1)?.id);
    },
  );

  await t.test(
    'a file uploaded through a non-owner on the public family is stored and usable in the conversation',
    async () => {
      const started = await must(cluster, 0, 'POST', '/v1/agents/demo/conversations', {});
      const conversation = expect(started, 201);
      const id = String(conversation.conversation.id);
      const bearer = { authorization: `Bearer ${conversation.session_token}` };
      const owner = await cluster.ownerOfSession(id);
      assert.equal(started.node, owner);

      // A multipart body, forwarded as it is streamed in.
      const form = await encodeForm(fileForm(tinyPng, 'dot.png', 'image/png'));
      const uploaded = await fetch(`${cluster.urls[1]}/v1/public/agents/conversations/${id}/files`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': form.contentType },
        body: form.payload,
      });
      const file = (await uploaded.json()) as { id: string; name: string; size: number; mime_type: string };
      assert.equal(uploaded.status, 201, JSON.stringify(file));
      assert.equal(uploaded.headers.get('x-parley-node'), owner);
      assert.deepEqual(
        { name: file.name, size: file.size, mime_type: file.mime_type },
        { name: 'dot.png', size: tinyPng.length, mime_type: 'image/png' },
      );

      const listed = await must(
        cluster,
        2,
        'GET',
        `/v1/public/agents/conversations/${id}/files`,
        undefined,
        bearer,
        '',
      );
      assert.deepEqual(
        (expect(listed, 200).items as Array<{ id: string }>).map((f) => f.id),
        [file.id],
      );
      assert.equal(listed.node, owner);

      const sent = await must(
        cluster,
        2,
        'POST',
        `/v1/public/agents/conversations/${id}/messages`,
        {
          content: [
            { type: 'text', text: 'See this' },
            { type: 'image', file_id: file.id },
          ],
        },
        bearer,
        '',
      );
      assert.match(expect(sent, 201).agent_message.content[0].text, /Attachments: 1\./);
      assert.equal(sent.node, owner);

      // The bytes, from the tenant pool (not session-scoped: any process reads them from the store).
      const content = await fetch(`${cluster.urls[2]}/v1/agents/files/${file.id}/content`, {
        headers: { 'x-api-key': cluster.apiKey },
      });
      assert.equal(content.status, 200);
      assert.deepEqual(Buffer.from(await content.arrayBuffer()), tinyPng);

      // A token refresh is session-scoped as well.
      const refreshed = await must(cluster, 1, 'POST', `/v1/agents/conversations/${id}/token`);
      assert.equal(expect(refreshed, 200).session_token.split('.').length, 3);
      assert.equal(refreshed.node, owner);
    },
  );

  await t.test(
    'the owned-shard gauges add up to 1,024 and a forwarding process counts its forwards',
    async () => {
      let owned = 0;
      for (const url of cluster.urls) {
        const metrics = await (await fetch(`${url}/metrics`)).text();
        const gauge = /^parley_owned_shards(?:\{[^}]*\})? (\d+)/m.exec(metrics);
        assert.ok(gauge, `${url}/metrics has parley_owned_shards`);
        owned += Number(gauge[1]);
      }
      assert.equal(owned, 1024);
      const metrics = await (await fetch(`${cluster.urls[1]}/metrics`)).text();
      const forwards = [...metrics.matchAll(/^parley_forwards_total\{[^}]*\} (\d+)/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
      assert.ok(
        forwards > 0,
        `B forwarded requests to A:\n${metrics.match(/^parley_forwards.*$/gm)?.join('\n')}`,
      );
    },
  );
});

test('a client that leaves a forwarded request before its answer is counted as gone, and the owner still finishes the turn', {
  timeout: 90_000,
}, async (t) => {
  const cluster = await startCluster(t, {
    nodes: 2,
    store: 'sqlite',
    env: { PARLEY_AGENTS_FILE: await agentsFile(t) },
  });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const created = await must(cluster, 0, 'POST', '/v1/agents/slow/sessions', {});
  const id = String(expect(created, 201).id);
  const entry = 1 - (await cluster.indexOf(String(await cluster.ownerOfSession(id))));
  const url = cluster.urls[entry] as string;

  // Gone while the owner works on the turn (each token of the reply takes 300 ms).
  await assert.rejects(
    fetch(`${url}/v1/agents/sessions/${id}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': cluster.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'are you there?' }),
      signal: AbortSignal.timeout(500),
    }),
  );
  // Gone in the middle of sending its body.
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /v1/agents/sessions/${id}/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${cluster.apiKey}\r\n` +
      'content-type: application/json\r\ncontent-length: 100\r\n\r\n{"content":',
  );
  await sleep(100);
  socket.destroy();

  let outcomes: Record<string, number> = {};
  for (let tries = 0; tries < 100 && (outcomes.client_gone ?? 0) < 2; tries++) {
    await sleep(50);
    outcomes = await countsBy(url, 'parley_forwards_total', 'outcome');
  }
  assert.equal(outcomes.client_gone, 2, JSON.stringify(outcomes));
  assert.equal(outcomes.unreachable, undefined, JSON.stringify(outcomes));
  assert.equal(await countsBy(url, 'parley_http_requests_total', 'status').then((c) => c['503']), undefined);

  // The owner finished the abandoned turn: its reply is stored.
  let count = 0;
  for (let tries = 0; tries < 200 && count < 2; tries++) {
    await sleep(50);
    count = Number(
      expect(await must(cluster, entry, 'GET', `/v1/agents/sessions/${id}`), 200).messages_count,
    );
  }
  assert.equal(count, 2);
});

test('two processes sharing one PostgreSQL database route a session to its owner', {
  timeout: 90_000,
}, async (t) => {
  const cluster = await startCluster(t, { nodes: 2, store: 'postgres' });
  if (!cluster) return;
  await cluster.waitUntilSettled();

  const session = await createSession(cluster, 0);
  const owner = await cluster.ownerOfSession(session.id);
  assert.equal(session.node, owner);
  const sent = await must(cluster, 1, 'POST', `/v1/agents/sessions/${session.id}/messages`, {
    content: 'hi',
  });
  assert.equal(
    expect(sent, 201).agent_message.content[0].text,
    'Hello! You said: "hi". Context: plan: "pro".',
  );
  assert.equal(sent.node, owner);
  const streamed = await stream(cluster, 1, session.id, 'and streamed', 'pg-stream');
  assert.equal(streamed.answer.node, owner);
  assert.equal(streamed.events.at(-1)?.event, 'turn.completed');

  const [first, second] = await Promise.all(
    [0, 1].map((node) => must(cluster, node, 'GET', `/v1/agents/sessions/${session.id}/messages`)),
  );
  assert.ok(first && second);
  assert.deepEqual(expect(second, 200), expect(first, 200));
  assert.deepEqual(
    (first.body.items as Array<{ role: string }>).map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  assert.deepEqual([first.node, second.node], [owner, owner]);
});
