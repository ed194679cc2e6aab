// A response whose agent calls a tool that must be approved, read with the official `openai` package: the
// plain answer reads `in_progress` with the call waiting as a `function_call` item, the stream ends with
// response.incomplete (reason awaiting_approval); the call is decided on the approvals route (the turn is the
// one the response id names), or by a request with previous_response_id and an `mcp_approval_response` item
// naming the call, after which the same turn answers.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import OpenAI from 'openai';
import { responseObject } from '#schemas';
import { useApp } from '../../helpers/app.ts';
import { approvalAgents, call } from '../../helpers/approvals.ts';
import { assertOpenResponse, assertOpenStreamEvent } from '../../helpers/open-responses-schema.ts';
import { buildSessionApp, testAgents } from '../../helpers/sessions.ts';
import { startToolReceiver } from '../../helpers/tool-receiver.ts';

let base = '';
// Stopped when the file ends (an `after` registered inside `before` would run right after it).
const stops: (() => unknown)[] = [];
const suite = { after: (fn: () => unknown) => void stops.push(fn) };
after(async () => {
  for (const stop of stops) await stop();
});
const t = useApp(async () => {
  const receiver = await startToolReceiver(suite);
  const app = await buildSessionApp({}, [...testAgents, ...approvalAgents(receiver.url)]);
  base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  return app;
});
const openai = () => new OpenAI({ apiKey: t.apiKey, baseURL: `${base}/v1`, maxRetries: 0 });

test('a response waiting for an approval reads in_progress, and completed once the call is decided', async () => {
  const client = openai();
  const waiting = await client.responses.create({ model: 'shop', input: call('refund', 'order 7') });
  responseObject.parse(waiting);
  assertOpenResponse(waiting);
  assert.equal(waiting.status, 'in_progress');
  const [asked] = waiting.output;
  assert.ok(asked?.type === 'function_call' && asked.name === 'refund' && asked.status === 'completed');
  const [sessionId, turnId] = waiting.id.replace(/^resp_/, '').split('.');
  const pending = await t.app.inject({
    method: 'GET',
    url: `/v1/agents/sessions/${sessionId}`,
    headers: { 'x-api-key': t.apiKey },
  });
  const [approval] = pending.json().pending_approvals as { call_id: string }[];
  assert.ok(approval);
  const decided = await t.app.inject({
    method: 'POST',
    url: `/v1/agents/sessions/${sessionId}/turns/${turnId}/approvals`,
    headers: { 'x-api-key': t.apiKey },
    payload: { decisions: [{ call_id: approval.call_id, approved: true }] },
  });
  assert.equal(decided.statusCode, 201, decided.body);
  const done = await client.responses.retrieve(waiting.id);
  assertOpenResponse(done);
  assert.equal(done.status, 'completed');
  assert.deepEqual(
    done.output.map((item) => item.type),
    ['function_call', 'function_call_output', 'message'],
  );

  const stream = await client.responses.create({
    model: 'shop',
    input: call('refund', 'order 8'),
    conversation: sessionId ?? '',
    stream: true,
  });
  const types: string[] = [];
  let reason: string | undefined;
  for await (const event of stream) {
    assertOpenStreamEvent(event);
    types.push(event.type);
    if (event.type === 'response.incomplete') reason = event.response.incomplete_details?.reason;
  }
  assert.equal(types.at(-1), 'response.incomplete');
  assert.equal(reason, 'awaiting_approval');
});

test('an mcp_approval_response naming the call decides it; the answer tells what the turn did next', async () => {
  const client = openai();
  const waiting = await client.responses.create({ model: 'shop', input: call('refund', 'order 9') });
  const [asked] = waiting.output;
  assert.ok(asked?.type === 'function_call');
  const approved = await client.responses.create({
    model: 'shop',
    previous_response_id: waiting.id,
    input: [{ type: 'mcp_approval_response', approval_request_id: asked.call_id, approve: true }],
  });
  responseObject.parse(approved);
  assertOpenResponse(approved);
  assert.equal(approved.status, 'completed');
  assert.deepEqual(
    approved.output.map((item) => item.type),
    ['function_call_output', 'message'],
  );
  const [result] = approved.output;
  assert.ok(result?.type === 'function_call_output' && result.call_id === asked.call_id);
  assert.match(approved.output_text, /refund ok/);

  // Streamed and denied: the stream starts after the pause and tells the denial, then the reply.
  const again = await client.responses.create({ model: 'shop', input: call('refund', 'order 10') });
  const [second] = again.output;
  assert.ok(second?.type === 'function_call');
  const stream = await client.responses.create({
    model: 'shop',
    previous_response_id: again.id,
    input: [
      { type: 'mcp_approval_response', approval_request_id: second.call_id, approve: false, reason: 'no' },
    ],
    stream: true,
  });
  const items: string[] = [];
  let final: OpenAI.Responses.Response | undefined;
  for await (const event of stream) {
    assertOpenStreamEvent(event);
    if (event.type === 'response.output_item.done') items.push(event.item.type);
    if (event.type === 'response.completed') final = event.response;
  }
  assert.deepEqual(items, ['function_call_output', 'message']);
  assert.ok(final);
  const denied = final.output[0];
  assert.ok(denied?.type === 'function_call_output');
  assert.deepEqual(JSON.parse(String(denied.output)), { error: 'denied', by: 'operator', reason: 'no' });
  // Decided already: a second answer for the call is refused.
  await assert.rejects(
    client.responses.create({
      model: 'shop',
      previous_response_id: again.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: second.call_id, approve: true }],
    }),
    (err) => err instanceof OpenAI.ConflictError && err.code === 'approval_not_pending',
  );
});
