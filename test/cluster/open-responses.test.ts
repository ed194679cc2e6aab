// The Open Responses routes in a cluster of processes sharing one store: a conversation started through one
// process is continued, read, listed, cancelled and its stream resumed through another, with the official `openai` package; each
// request is served by the owner of the session it names.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import OpenAI from 'openai';
import { type Cluster, startCluster } from '../helpers/cluster.ts';
import { assertOpenResponse, assertOpenStreamEvent } from '../helpers/open-responses-schema.ts';
import { killLeftoverChildren } from '../helpers/process.ts';

after(killLeftoverChildren);

const clientOf = (cluster: Cluster, i: number) =>
  new OpenAI({ apiKey: cluster.apiKey, baseURL: `${cluster.urls[i]}/v1`, maxRetries: 0 });

test('a conversation started on one process goes on through a process that does not own it', async (t) => {
  const cluster = await startCluster(t, { nodes: 2 });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const first = await clientOf(cluster, 0).responses.create({ model: 'demo', input: 'hello there' });
  const sessionId = first.conversation?.id ?? '';
  const owner = await cluster.indexOf((await cluster.ownerOfSession(sessionId)) ?? '');
  const other = clientOf(cluster, 1 - owner);

  const second = await other.responses.create({
    model: 'demo',
    input: 'again',
    previous_response_id: first.id,
  });
  assertOpenResponse(second);
  assert.equal(second.conversation?.id, sessionId);
  const stream = await other.responses.create({
    model: 'demo',
    input: 'streamed',
    conversation: sessionId,
    stream: true,
  });
  let text = '';
  for await (const event of stream) {
    assertOpenStreamEvent(event);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  assert.match(text, /You said: "streamed"/);

  const read = await other.responses.retrieve(second.id);
  assertOpenResponse(read);
  assert.equal(read.output_text, second.output_text);
  const items = [];
  for await (const item of other.conversations.items.list(sessionId, { order: 'asc' })) items.push(item);
  assert.equal(items.length, 6);
  assert.equal((await other.responses.cancel(second.id)).status, 'completed');
  // The stream again, from its first event on, through the process that did not run it.
  const resumed = [];
  for await (const event of await other.responses.retrieve(second.id, { stream: true, starting_after: 0 })) {
    assertOpenStreamEvent(event);
    resumed.push(event);
  }
  assert.equal(resumed[0]?.type, 'response.in_progress');
  const last = resumed.at(-1);
  assert.ok(last?.type === 'response.completed');
  assert.deepEqual(last.response.output, read.output);
});
