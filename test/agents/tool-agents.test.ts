// Tool steps on the real wire protocols, end to end through the app: an openai and an anthropic agent
// whose (fake) model asks for a tool in its own wire format, the HTTP tool answering on loopback, and the
// next request carrying the result back in that format. Out of steps, the tools stay declared but the model
// may not call them (tool_choice none), as Anthropic needs for a history holding tool calls.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type FakeModelServer, startFakeModelServer } from '../../support/fake-model-server.ts';
import type { TestApp } from '../helpers/app.ts';
import { buildSessionApp, createSession, send, textOf } from '../helpers/sessions.ts';
import {
  inputValue,
  recordedOutput,
  startToolReceiver,
  type ToolReceiver,
  toolAgent,
} from '../helpers/tool-receiver.ts';

let fake: FakeModelServer;
let receiver: ToolReceiver;
let t: TestApp;

before(async () => {
  fake = await startFakeModelServer();
  // Closed below, after the app that calls it.
  receiver = await startToolReceiver(
    { after: () => {} },
    {
      effect: (body) =>
        inputValue(body.input) === 'big'
          ? { text: 'x'.repeat(4000) }
          : recordedOutput(inputValue(body.input)),
    },
  );
  const agent = (id: string, provider: string, extra: object = {}) => ({
    ...toolAgent(receiver.url, id),
    provider,
    model: 'fake-model',
    base_url: fake.baseUrl,
    api_key_env: 'FAKE_API_KEY',
    timeouts: { total_ms: 10_000, stall_ms: 5_000 },
    ...extra,
  });
  t = await buildSessionApp({ FAKE_API_KEY: 'fake-key' }, [
    agent('gpt', 'openai'),
    agent('claude', 'anthropic'),
    agent('claude-once', 'anthropic', { max_steps: 1 }),
    agent('gpt-small', 'openai', { context_window: 2048, max_tokens: 256 }),
  ]);
});
after(async () => {
  await t?.close();
  await fake?.close();
  await receiver?.close();
});

/** Sends to a new session of `agent` while the model first calls `record`, then answers. */
async function toolTurn(agent: string, value: string) {
  fake.queue.push(
    { kind: 'tools', text: 'Recording.', calls: [{ name: 'record', input: { value } }] },
    { kind: 'reply', text: 'Recorded it.' },
  );
  const since = fake.requests.length;
  const session = await createSession(t, agent);
  const res = await send(t, session.id, { content: `Please record ${value}` });
  assert.equal(res.statusCode, 201, res.body);
  return { reply: res.json().agent_message, requests: fake.requests.slice(since) };
}

describe('a tool step on the wire', () => {
  test('openai: the tool_calls of the stream are run and sent back as a tool message with their id', async () => {
    const { reply, requests } = await toolTurn('gpt', 'g1');
    assert.equal(requests.length, 2);
    const [call] = reply.tool_calls;
    assert.deepEqual(
      [call.name, call.input, call.status, call.output],
      ['record', { value: 'g1' }, 'ok', { recorded: 'g1' }],
    );
    assert.equal(textOf(reply), 'Recording.\n\nRecorded it.');
    const messages = requests[1]?.body.messages as {
      role: string;
      tool_call_id?: string;
      content?: unknown;
      tool_calls?: { id: string }[];
    }[];
    const assistant = messages.find((m) => m.role === 'assistant' && m.tool_calls);
    const result = messages.find((m) => m.role === 'tool');
    assert.equal(assistant?.tool_calls?.[0]?.id, call.id);
    assert.equal(result?.tool_call_id, call.id);
    assert.match(JSON.stringify(result?.content), /recorded.*g1/);
    const tools = requests[0]?.body.tools as { function: { name: string } }[] | undefined;
    assert.equal(tools?.[0]?.function.name, 'record');
  });

  test('anthropic: a tool_use block is run and its tool_result goes back in the next user message', async () => {
    const { reply, requests } = await toolTurn('claude', 'c1');
    assert.equal(requests.length, 2);
    const [call] = reply.tool_calls;
    assert.equal(call.status, 'ok');
    const messages = requests[1]?.body.messages as {
      role: string;
      content: { type: string; id?: string; tool_use_id?: string }[];
    }[];
    const uses = messages.flatMap((m) => m.content).filter((b) => b.type === 'tool_use');
    const results = messages.flatMap((m) => m.content).filter((b) => b.type === 'tool_result');
    assert.deepEqual([uses[0]?.id, results[0]?.tool_use_id], [call.id, call.id]);
  });

  test('anthropic out of steps: the last call declares the tools with tool_choice none and ends with max_steps', async () => {
    const { reply, requests } = await toolTurn('claude-once', 'c2');
    assert.equal(requests.length, 2);
    assert.equal((requests[1]?.body.tools as unknown[] | undefined)?.length, 1);
    assert.deepEqual(requests[1]?.body.tool_choice, { type: 'none' });
    assert.equal(reply.stop_reason, 'max_steps');
  });

  test('a large tool result makes room for itself in the next step: older history is left out, not the result', async () => {
    const session = await createSession(t, 'gpt-small');
    for (let i = 0; i < 4; i++) {
      const res = await send(t, session.id, { content: `${i} ${'word '.repeat(200)}` });
      assert.equal(res.statusCode, 201, res.body);
    }
    fake.queue.push(
      { kind: 'tools', calls: [{ name: 'record', input: { value: 'big' } }] },
      { kind: 'reply', text: 'Noted.' },
    );
    const since = fake.requests.length;
    const res = await send(t, session.id, { content: 'Fetch the big one' });
    assert.equal(res.statusCode, 201, res.body);
    const [first, second] = fake.requests.slice(since).map((r) => r.body.messages as { role: string }[]);
    const history = (messages: { role: string }[] | undefined) =>
      (messages ?? []).filter((m) => m.role === 'user' || (m.role === 'assistant' && !('tool_calls' in m)));
    assert.equal(history(first).length, 9, 'the first step sees the whole history');
    assert.ok(history(second).length < history(first).length, 'the second step leaves older history out');
    assert.match(JSON.stringify(history(second).at(-1)), /Fetch the big one/);
    assert.ok(JSON.stringify(second).includes('x'.repeat(4000)), 'the tool result is sent whole');
  });
});
