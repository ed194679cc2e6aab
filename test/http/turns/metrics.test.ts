// The turn metrics on /metrics, read from a real listening app after real turns: turns and tokens by agent,
// time to first token by agent, and the streams open now, by protocol (Parley's SSE and the AI SDK chat),
// counted while a slow reply streams and back to 0 once it has ended.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { pollUntil } from '../../../support/processes.ts';
import type { TestApp } from '../../helpers/app.ts';
import { buildSessionApp, createSession } from '../../helpers/sessions.ts';

// `slowish` writes a token every 40 ms: a reply of a few words streams long enough to be seen open.
const agents = [
  { id: 'demo', instructions: 'You are a friendly demo agent. Answer briefly.' },
  { id: 'slowish', scripted: { token_delay_ms: 40 } },
];

let t: TestApp;
let base: string;
before(async () => {
  t = await buildSessionApp({}, agents);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
after(() => t.close());

async function metrics(): Promise<string> {
  const response = await fetch(`${base}/metrics`);
  assert.equal(response.status, 200);
  return response.text();
}

/** The value of the sample `name{labels}` (labels in any order), or undefined when there is none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries(
      (match[2] ?? '')
        .split(',')
        .filter(Boolean)
        .map((pair) => {
          const [key, value] = pair.split('=');
          return [key, JSON.parse(value ?? '""')];
        }),
    );
    if (Object.entries(labels).every(([key, value]) => have[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const post = (path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** Reads a streamed answer: waits for its first piece, runs `whileOpen`, then reads it to the end. */
async function readStream(response: Response, whileOpen: () => Promise<void>): Promise<string> {
  assert.equal(response.status, 200);
  const reader = response.body?.getReader();
  assert.ok(reader);
  const decoder = new TextDecoder();
  const first = await reader.read();
  let text = decoder.decode(first.value);
  await whileOpen();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return text;
    text += decoder.decode(value);
  }
}

/** Waits until the open-streams gauge of `protocol` reads `value` (a stream closes just after its end). */
async function openStreamsReach(protocol: string, value: number) {
  let last: number | undefined;
  const reached = await pollUntil(
    async () => {
      last = sample(await metrics(), 'parley_open_streams', { protocol });
      return last === value;
    },
    { gone: () => false, timeoutMs: 10_000, intervalMs: 20 },
  );
  assert.equal(reached, 'ready', `parley_open_streams{protocol="${protocol}"} stayed ${last}, not ${value}`);
}

describe('turn metrics on /metrics', () => {
  test('before any turn the open-stream gauges read 0 for both protocols', async () => {
    const text = await metrics();
    assert.equal(sample(text, 'parley_open_streams', { protocol: 'sse' }), 0);
    assert.equal(sample(text, 'parley_open_streams', { protocol: 'chat' }), 0);
  });

  test('a plain send counts a turn, its input and output tokens and its time to first token under its agent', async () => {
    const session = await createSession(t, 'demo');
    const response = await post(`/v1/agents/sessions/${session.id}/messages`, {
      content: 'count these words',
    });
    assert.equal(response.status, 201, await response.clone().text());
    const { agent_message: reply } = (await response.json()) as {
      agent_message: { usage: { input_tokens: number; output_tokens: number } };
    };

    const text = await metrics();
    assert.equal(sample(text, 'parley_agent_turns_total', { agent: 'demo', outcome: 'replied' }), 1);
    assert.equal(
      sample(text, 'parley_tokens_total', { agent: 'demo', direction: 'input' }),
      reply.usage.input_tokens,
    );
    assert.equal(
      sample(text, 'parley_tokens_total', { agent: 'demo', direction: 'output' }),
      reply.usage.output_tokens,
    );
    assert.ok(reply.usage.output_tokens > 0);
    assert.equal(sample(text, 'parley_time_to_first_token_seconds_count', { agent: 'demo' }), 1);
    // Nothing of another agent's.
    assert.equal(sample(text, 'parley_agent_turns_total', { agent: 'slowish' }), undefined);
  });

  test('an SSE stream is counted open while its reply streams, and not once it has ended', async () => {
    const session = await createSession(t, 'slowish');
    const response = await post(`/v1/agents/sessions/${session.id}/messages/stream`, {
      content: 'a reply long enough to be watched while it streams',
    });
    const events = await readStream(response, () => openStreamsReach('sse', 1));
    assert.match(events, /event: turn\.completed/);
    await openStreamsReach('sse', 0);

    const text = await metrics();
    assert.equal(sample(text, 'parley_agent_turns_total', { agent: 'slowish', outcome: 'replied' }), 1);
    assert.equal(sample(text, 'parley_time_to_first_token_seconds_count', { agent: 'slowish' }), 1);
    // The first token came after at least one token delay of 40 ms.
    const sum = sample(text, 'parley_time_to_first_token_seconds_sum', { agent: 'slowish' });
    assert.ok(sum !== undefined && sum >= 0.04, `time to first token ${sum}`);
  });

  test('an AI SDK chat stream is counted open under chat while it streams, and not once it has ended', async () => {
    const session = await createSession(t, 'slowish');
    const response = await post(`/v1/agents/sessions/${session.id}/chat`, {
      id: 'chat-1',
      trigger: 'submit-message',
      messages: [
        {
          id: 'u-1',
          role: 'user',
          parts: [{ type: 'text', text: 'a chat reply long enough to be watched while it streams' }],
        },
      ],
    });
    const chunks = await readStream(response, async () => {
      await openStreamsReach('chat', 1);
      assert.equal(sample(await metrics(), 'parley_open_streams', { protocol: 'sse' }), 0);
    });
    assert.match(chunks, /"type":"finish"/);
    await openStreamsReach('chat', 0);
    assert.equal(
      sample(await metrics(), 'parley_agent_turns_total', { agent: 'slowish', outcome: 'replied' }),
      2,
    );
  });

  test('a client that leaves in the middle of a stream is no longer counted', async () => {
    const session = await createSession(t, 'slowish');
    const controller = new AbortController();
    const response = await fetch(`${base}/v1/agents/sessions/${session.id}/messages/stream`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'a reply that nobody reads to its end, long enough to be cut' }),
      signal: controller.signal,
    });
    await response.body?.getReader().read();
    await openStreamsReach('sse', 1);
    controller.abort();
    await openStreamsReach('sse', 0);
  });
});
