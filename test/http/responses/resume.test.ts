// Resuming a response's event stream (`GET /v1/responses/{id}?stream=true&starting_after=N`) with the
// official `openai` package: a client that dropped its stream gets the events after the last one it had,
// without loss or duplicates, both while the turn still runs (followed live) and once it is finished
// (rebuilt from the store), numbered as the first stream numbered them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { responseStreamEvent } from '#schemas';
import { assertOpenStreamEvent } from '../../helpers/open-responses-schema.ts';
import { allMessages, testAgents, textOf, useSessionApp } from '../../helpers/sessions.ts';

let base = '';
const t = useSessionApp({
  agents: [...testAgents, { id: 'crawl', scripted: { token_delay_ms: 30 } }],
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});
const openai = () => new OpenAI({ apiKey: t.apiKey, baseURL: `${base}/v1`, maxRetries: 0 });

/** Every event of a stream, each checked against the wire schema and the specification's own. */
async function drain(stream: AsyncIterable<ResponseStreamEvent>, into: ResponseStreamEvent[] = []) {
  for await (const event of stream) {
    responseStreamEvent.parse(event);
    assertOpenStreamEvent(event);
    into.push(event);
  }
  return into;
}

const deltas = (events: ResponseStreamEvent[]) =>
  events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');

test('a stream dropped while the turn runs is resumed live after the last event, without loss or duplicates', async () => {
  const client = openai();
  const first = await client.responses.create({
    model: 'crawl',
    input: 'a reply of several words to resume',
    stream: true,
  });
  const seen: ResponseStreamEvent[] = [];
  for await (const event of first) {
    assertOpenStreamEvent(event);
    seen.push(event);
    if (event.type === 'response.output_text.delta' && seen.filter((e) => e.type === event.type).length === 2)
      break; // The client goes away mid-reply.
  }
  const created = seen[0];
  assert.ok(created?.type === 'response.created');
  const last = seen.at(-1)?.sequence_number ?? -1;
  const rest = await drain(
    await client.responses.retrieve(created.response.id, { stream: true, starting_after: last }),
  );
  assert.ok(rest.every((e) => e.sequence_number > last));
  assert.equal(rest.at(-1)?.type, 'response.completed');
  const stored = await allMessages(t, created.response.conversation?.id ?? '');
  const reply = stored[1];
  assert.ok(reply);
  assert.equal(deltas(seen) + deltas(rest), textOf(reply));
});

test('a finished response is replayed after any event as the first stream told it', async () => {
  const client = openai();
  const whole = await drain(
    await client.responses.create({ model: 'demo', input: 'replay me please', stream: true }),
  );
  const id = whole[0]?.type === 'response.created' ? whole[0].response.id : '';
  const replayed = await drain(await client.responses.retrieve(id, { stream: true }));
  // The replay tells the text in one delta where the live stream told it word by word, numbered alike.
  const others = (events: ResponseStreamEvent[]) =>
    events.filter((e) => e.type !== 'response.output_text.delta').map((e) => [e.type, e.sequence_number]);
  assert.deepEqual(others(replayed), others(whole));
  assert.equal(deltas(replayed), deltas(whole));
  // After the first live delta: the replay's one delta is cut there, and the rest follows once.
  const delta = whole.find((e) => e.type === 'response.output_text.delta');
  assert.ok(delta?.type === 'response.output_text.delta');
  const cut = delta.sequence_number;
  const rest = await drain(await client.responses.retrieve(id, { stream: true, starting_after: cut }));
  const told = whole.filter((e) => e.sequence_number <= cut);
  assert.equal(deltas(told) + deltas(rest), deltas(whole));
  assert.ok(rest.every((e) => e.sequence_number > cut));
  assert.deepEqual(others(rest), others(whole.filter((e) => e.sequence_number > cut)));
  assert.deepEqual(rest.at(-1), whole.at(-1));
});
