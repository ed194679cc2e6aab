// A decision that lets a paused turn go on to the model is admitted by memory as a send is
// (docs/internals/decisions.md#resident-memory): with the process's bound held by another turn and no room to
// wait, it is answered 503 server_busy and nothing of it is committed, so the call still waits and the same
// decision is applied once there is room.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestApp } from '../../helpers/app.ts';
import { type FakeChatServer, startFakeChatServer } from '../../helpers/fake-chat-server.ts';
import { buildSessionApp, client, createSession } from '../../helpers/sessions.ts';
import {
  recordDirective,
  startToolReceiver,
  type ToolReceiver,
  toolAgent,
} from '../../helpers/tool-receiver.ts';
import { waitFor } from '../../helpers/wait.ts';

let model: FakeChatServer;
let tools: ToolReceiver;
let t: TestApp;
// Stopped when the file ends (an `after` registered inside `before` would run right after it).
const stops: (() => unknown)[] = [];
const suite = { after: (fn: () => unknown) => void stops.push(fn) };
before(async () => {
  model = await startFakeChatServer({ contextTokens: 100_000, held: true });
  tools = await startToolReceiver(suite);
  const approver = toolAgent(tools.url, 'approver');
  t = await buildSessionApp(
    {
      PARLEY_MAX_RESIDENT_BYTES: '400000',
      PARLEY_TENANT_RESIDENT_PERCENT: '100',
      PARLEY_ADMISSION_QUEUE: '0',
    },
    [
      { id: 'slow-model', provider: 'openai-compatible', base_url: model.baseUrl, model: 'm' },
      { ...approver, tools: approver.tools.map((tool) => ({ ...tool, approval: 'operator' })) },
    ],
  );
});
after(async () => {
  model.open();
  await t?.close();
  await model?.close();
  for (const stop of stops) await stop();
});

test('a decision with no memory free for its turn is refused with 503 server_busy and applied once there is room', async () => {
  const api = client(t);
  const session = await createSession(t, 'approver');
  const paused = await api.post(`/v1/agents/sessions/${session.id}/messages`, {
    content: recordDirective('after the wait'),
  });
  assert.equal(paused.statusCode, 202, paused.body);
  const turn = paused.json().turn as { id: string; approvals: { call_id: string }[] };
  const decision = { decisions: [{ call_id: turn.approvals[0]?.call_id, approved: true }] };
  const decide = () => api.post(`/v1/agents/sessions/${session.id}/turns/${turn.id}/approvals`, decision);

  const busy = await createSession(t, 'slow-model');
  const held = api.post(`/v1/agents/sessions/${busy.id}/messages`, { content: 'Take your time.' });
  await waitFor('the other turn at the model', () => model.waiting === 1);

  const refused = await decide();
  assert.equal(refused.statusCode, 503, refused.body);
  assert.equal(refused.json().error.code, 'server_busy');
  const read = await api.get(`/v1/agents/sessions/${session.id}`);
  assert.equal(read.json().pending_approvals.length, 1, 'the call still waits');
  assert.equal(tools.requests.length, 0, 'the tool was not called');

  model.open();
  assert.equal((await held).statusCode, 201);
  const applied = await decide();
  assert.equal(applied.statusCode, 201, applied.body);
  assert.equal(tools.requests.length, 1);
});
