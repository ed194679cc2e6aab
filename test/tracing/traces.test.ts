// Acceptance of issue 32 on one process: a real service exporting to a real OTLP/HTTP receiver on loopback
// (test/helpers/otlp-receiver.ts). A send is one trace of the documented spans (docs/reference/traces.md):
// the HTTP server span, `parley.turn`, a `chat` span per model call and an `execute_tool` span per tool call,
// with their attributes and parentage; the tool server and the webhook receiver get the trace's
// `traceparent`; a client's own `traceparent` is honoured; no content is recorded unless asked for, and
// never a key or a file's bytes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call } from '../helpers/load.ts';
import {
  inTrace,
  type OtlpReceiver,
  type ReceivedSpan,
  spanNamed,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.ts';
import { killLeftoverChildren, type ServiceProcess, startService, tempDir } from '../helpers/process.ts';
import {
  recordDirective,
  startToolReceiver,
  type ToolReceiver,
  toolAgent,
  writeAgentsFile,
} from '../helpers/tool-receiver.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

after(killLeftoverChildren);

const apiKey = 'traces-test-key-0123456789abcdef';
const SERVER = 2;
const CLIENT = 3;

/** A service exporting every span at once (a 50 ms batch delay) in OTLP JSON to `receiver`. */
async function tracedService(
  t: Parameters<typeof tempDir>[0],
  receiver: OtlpReceiver,
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  return startService({
    dataDir: await tempDir(t, 'parley-traces-'),
    env: {
      PARLEY_BOOTSTRAP_API_KEY: apiKey,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
}

async function must(
  service: ServiceProcess,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers = {},
) {
  const answer = await call(service.url, apiKey, method, path, body, headers);
  if ('error' in answer) assert.fail(`${method} ${path}: ${answer.error}`);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as Record<string, unknown>;
}

/** The chain of parents from `span` up to its trace's root (the span itself first). */
function ancestry(spans: readonly ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const chain = [span];
  for (let s = span; s.parentSpanId !== ''; ) {
    const parent = spans.find((p) => p.spanId === s.parentSpanId);
    if (!parent) break;
    chain.push(parent);
    s = parent;
  }
  return chain;
}

const turnOf = (sessionId: string) => (spans: readonly ReceivedSpan[]) =>
  spans.find((s) => s.name === 'parley.turn' && s.attributes['parley.session'] === sessionId);

describe('traces of one process', () => {
  let receiver: OtlpReceiver;
  let tools: ToolReceiver;
  let service: ServiceProcess;

  // What the suite starts is stopped when it ends (an `after` inside `before` would run right after it).
  const cleanup: (() => unknown)[] = [];
  const t = { after: (fn: () => unknown) => void cleanup.push(fn) };
  after(async () => {
    for (const fn of cleanup.reverse()) await fn();
  });

  before(async () => {
    receiver = await startOtlpReceiver(t);
    tools = await startToolReceiver(t);
    const agentsFile = await writeAgentsFile(t, [
      { id: 'demo', name: 'Demo', instructions: 'Echo.', provider: 'scripted' },
      toolAgent(tools.url),
      {
        ...toolAgent(tools.url, 'approver'),
        tools: toolAgent(tools.url).tools.map((tool) => ({ ...tool, approval: 'user' })),
      },
    ]);
    service = await tracedService(t, receiver, { PARLEY_AGENTS_FILE: agentsFile });
  });

  test('a send is one trace: the HTTP server span, parley.turn with its attributes, and a chat span under it', async () => {
    await must(service, 'POST', '/v1/agents/users', { reference: 'crm-42', name: 'Ada' });
    const session = await must(service, 'POST', '/v1/agents/demo/sessions', {
      user: { reference: 'crm-42' },
    });
    const sessionId = String(session.id);
    const sent = await must(service, 'POST', `/v1/agents/sessions/${sessionId}/messages`, {
      content: 'Hello!',
    });

    const spans = await receiver.waitFor((all) => {
      const turn = turnOf(sessionId)(all);
      return !!turn && inTrace(all, turn.traceId).some((s) => s.kind === SERVER);
    });
    const turn = turnOf(sessionId)(spans) as ReceivedSpan;
    const trace = inTrace(spans, turn.traceId);
    assert.deepEqual(turn.attributes, {
      'parley.tenant': turn.attributes['parley.tenant'],
      'parley.agent': 'demo',
      'parley.session': sessionId,
      'parley.turn': turn.attributes['parley.turn'],
      'parley.user.reference': 'crm-42',
      'parley.idempotent_replay': false,
    });
    assert.equal(turn.attributes['parley.tenant'], 'default');
    assert.match(String(turn.attributes['parley.turn']), /^turn_/);

    const chat = spanNamed(trace, 'chat scripted', (s) => s.parentSpanId === turn.spanId);
    assert.equal(chat.kind, CLIENT);
    assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(chat.attributes['gen_ai.provider.name'], 'scripted');
    assert.equal(chat.attributes['gen_ai.request.model'], 'scripted');
    assert.equal(chat.attributes['gen_ai.conversation.id'], sessionId);
    const usage = (sent.agent_message as { usage: { input_tokens: number; output_tokens: number } }).usage;
    assert.equal(chat.attributes['gen_ai.usage.input_tokens'], usage.input_tokens);
    assert.equal(chat.attributes['gen_ai.usage.output_tokens'], usage.output_tokens);
    assert.deepEqual(chat.attributes['gen_ai.response.finish_reasons'], ['stop']);
    assert.equal(chat.attributes['gen_ai.input.messages'], undefined, 'no content without the opt-in');

    // The turn sits under the request's server span, named by its route.
    const server = spanNamed(
      trace,
      'POST /v1/agents/sessions/:session_id/messages',
      (s) => s.kind === SERVER,
    );
    assert.ok(ancestry(trace, turn).includes(server));
    assert.equal(server.parentSpanId, '');
    for (const s of trace) assert.doesNotMatch(JSON.stringify(s.attributes), new RegExp(apiKey));
  });

  test("a client's traceparent is honoured: the turn joins the client's trace", async () => {
    const session = await must(service, 'POST', '/v1/agents/demo/sessions', {});
    const sessionId = String(session.id);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    await must(
      service,
      'POST',
      `/v1/agents/sessions/${sessionId}/messages`,
      { content: 'Traced by the caller' },
      { traceparent: `00-${traceId}-${parent}-01` },
    );
    const spans = await receiver.waitFor((all) => !!turnOf(sessionId)(all));
    const turn = turnOf(sessionId)(spans) as ReceivedSpan;
    assert.equal(turn.traceId, traceId);
    const server = spanNamed(inTrace(spans, traceId), 'POST /v1/agents/sessions/:session_id/messages');
    assert.equal(server.parentSpanId, parent);
  });

  test('a tool turn has one execute_tool span per call, and the tool server receives the trace', async () => {
    const session = await must(service, 'POST', '/v1/agents/toolbot/sessions', {});
    const sessionId = String(session.id);
    const first = tools.requests.length;
    await must(service, 'POST', `/v1/agents/sessions/${sessionId}/messages`, {
      content: `${recordDirective('one')} ${recordDirective('two')}`,
    });
    const spans = await receiver.waitFor((all) => {
      const turn = turnOf(sessionId)(all);
      return !!turn && inTrace(all, turn.traceId).filter((s) => s.name === 'execute_tool record').length >= 2;
    });
    const turn = turnOf(sessionId)(spans) as ReceivedSpan;
    const trace = inTrace(spans, turn.traceId);
    const executions = trace.filter((s) => s.name === 'execute_tool record');
    assert.equal(executions.length, 2);
    const calls = tools.requests.slice(first);
    assert.equal(calls.length, 2);
    assert.deepEqual(
      new Set(executions.map((s) => s.attributes['gen_ai.tool.call.id'])),
      new Set(calls.map((c) => c.body?.call_id)),
    );
    for (const execution of executions) {
      assert.equal(execution.attributes['gen_ai.operation.name'], 'execute_tool');
      assert.equal(execution.attributes['gen_ai.tool.name'], 'record');
      assert.equal(execution.attributes['gen_ai.tool.call.arguments'], undefined);
      assert.ok(ancestry(trace, execution).includes(turn), 'the call runs within the turn');
    }
    // Two model calls: the one that asked for the tools, the one that answered with their results.
    const chats = trace.filter((s) => s.name === 'chat scripted');
    assert.deepEqual(chats.map((s) => s.attributes['gen_ai.response.finish_reasons']).sort(), [
      ['stop'],
      ['tool_call'],
    ]);
    // Each call's traceparent names the trace, and the HTTP client span that sent it.
    for (const request of calls) {
      const traceparent = String(request.headers.traceparent ?? '');
      const [, traceId, spanId] = traceparent.split('-');
      assert.equal(traceId, turn.traceId, traceparent);
      const client = spanNamed(trace, 'POST', (s) => s.spanId === spanId);
      assert.equal(client.kind, CLIENT);
      assert.ok(executions.some((e) => e.spanId === client.parentSpanId));
    }
  });

  test('an approval waited on is a parley.approval span from its request to its decision, in the deciding request', async () => {
    const session = await must(service, 'POST', '/v1/agents/approver/sessions', {});
    const sessionId = String(session.id);
    const paused = await must(service, 'POST', `/v1/agents/sessions/${sessionId}/messages`, {
      content: recordDirective('approved value'),
    });
    const turn = paused.turn as { id: string; approvals: { call_id: string }[] };
    const callId = String(turn.approvals[0]?.call_id);
    await must(service, 'POST', `/v1/agents/sessions/${sessionId}/turns/${turn.id}/approvals`, {
      decisions: [{ call_id: callId, approved: true }],
    });
    const decidingRoute = 'POST /v1/agents/sessions/:session_id/turns/:turn_id/approvals';
    // The deciding request's span ends after the approval's, and may come in a later export: wait for both.
    const spans = await receiver.waitFor((all) => {
      const found = all.find(
        (s) => s.name === 'parley.approval' && s.attributes['parley.session'] === sessionId,
      );
      return (
        found !== undefined &&
        all.some((s) => s.traceId === found.traceId && s.name === decidingRoute && s.kind === SERVER)
      );
    });
    const approval = spans.find(
      (s) => s.name === 'parley.approval' && s.attributes['parley.session'] === sessionId,
    ) as ReceivedSpan;
    assert.deepEqual(approval.attributes, {
      'parley.session': sessionId,
      'parley.turn': turn.id,
      'gen_ai.tool.name': 'record',
      'gen_ai.tool.call.id': callId,
      'parley.approval.approver': 'user',
      'parley.approval.decision': 'approved',
    });
    // It sits in the trace of the request that decided it.
    const decided = spanNamed(inTrace(spans, approval.traceId), decidingRoute, (s) => s.kind === SERVER);
    assert.ok(ancestry(spans, approval).includes(decided));
  });

  test('a send repeated under its Idempotency-Key is a parley.turn marked as a replay', async () => {
    const session = await must(service, 'POST', '/v1/agents/demo/sessions', {});
    const sessionId = String(session.id);
    const path = `/v1/agents/sessions/${sessionId}/messages`;
    const headers = { 'idempotency-key': 'replayed-once' };
    await must(service, 'POST', path, { content: 'Once' }, headers);
    await must(service, 'POST', path, { content: 'Once' }, headers);
    const spans = await receiver.waitFor(
      (all) =>
        all.filter((s) => s.name === 'parley.turn' && s.attributes['parley.session'] === sessionId).length >=
        2,
    );
    const turns = spans.filter(
      (s) => s.name === 'parley.turn' && s.attributes['parley.session'] === sessionId,
    );
    assert.deepEqual(
      turns.map((s) => s.attributes['parley.idempotent_replay']),
      [false, true],
    );
    assert.equal(turns[0]?.attributes['parley.turn'], turns[1]?.attributes['parley.turn'], 'the same turn');
  });

  test('two sends queued on one session each run in their own trace', async () => {
    const session = await must(service, 'POST', '/v1/agents/demo/sessions', {});
    const sessionId = String(session.id);
    const path = `/v1/agents/sessions/${sessionId}/messages`;
    await Promise.all([
      must(service, 'POST', path, { content: 'First in line' }),
      must(service, 'POST', path, { content: 'Second in line' }),
    ]);
    const spans = await receiver.waitFor(
      (all) =>
        all.filter((s) => s.name === 'parley.turn' && s.attributes['parley.session'] === sessionId).length >=
        2,
    );
    const turns = spans.filter(
      (s) => s.name === 'parley.turn' && s.attributes['parley.session'] === sessionId,
    );
    assert.notEqual(turns[0]?.traceId, turns[1]?.traceId);
    for (const turn of turns) {
      const trace = inTrace(spans, turn.traceId);
      assert.ok(trace.some((s) => s.name === 'chat scripted' && s.parentSpanId === turn.spanId));
      assert.equal(trace.filter((s) => s.name === 'parley.turn').length, 1, 'one turn per trace');
      assert.ok(
        ancestry(trace, turn).some((s) => s.kind === SERVER),
        "under its own request's span",
      );
    }
  });

  test('a webhook delivery is a span of its own, and the receiver gets its traceparent but the URL is not recorded', async () => {
    const webhooks = await startWebhookReceiver(t);
    await must(service, 'POST', '/v1/agents/webhooks', {
      url: `${webhooks.url}/secret-path-token`,
      events: ['turn.completed'],
    });
    const session = await must(service, 'POST', '/v1/agents/demo/sessions', {});
    await must(service, 'POST', `/v1/agents/sessions/${session.id}/messages`, { content: 'Tell the CRM' });
    const spans = await receiver.waitFor((all) =>
      all.some(
        (s) =>
          s.name === 'parley.webhook.delivery' &&
          s.attributes['parley.webhook.event_type'] === 'turn.completed',
      ),
    );
    const delivery = spanNamed(spans, 'parley.webhook.delivery');
    assert.equal(delivery.attributes['http.response.status_code'], 200);
    assert.equal(delivery.attributes['parley.webhook.attempt'], 1);
    const [, traceId] = String(webhooks.requests[0]?.headers.traceparent ?? '').split('-');
    assert.equal(traceId, delivery.traceId);
    for (const s of inTrace(spans, delivery.traceId))
      assert.doesNotMatch(JSON.stringify(s.attributes), /secret-path-token/);
  });
});

test('with content capture on, the prompt and reply are recorded, a file as its type only', async (t) => {
  const receiver = await startOtlpReceiver(t);
  const service = await tracedService(t, receiver, {
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
  });
  const fileText = 'Order A-1042: the bytes of this file stay out of the traces';
  const form = new FormData();
  form.append('file', new Blob([fileText], { type: 'text/plain' }), 'order.txt');
  const uploaded = (await (
    await fetch(`${service.url}/v1/agents/files`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      body: form,
    })
  ).json()) as { id: string };
  const session = await must(service, 'POST', '/v1/agents/demo/sessions', { context: { plan: 'pro' } });
  const sessionId = String(session.id);
  await must(service, 'POST', `/v1/agents/sessions/${sessionId}/messages`, {
    content: [
      { type: 'text', text: 'Where is my order?' },
      { type: 'file', file_id: uploaded.id },
    ],
  });
  const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'chat scripted'));
  const chat = spanNamed(spans, 'chat scripted', (s) => s.attributes['gen_ai.conversation.id'] === sessionId);
  const input = JSON.parse(String(chat.attributes['gen_ai.input.messages'])) as {
    role: string;
    parts: Record<string, unknown>[];
  }[];
  assert.deepEqual(input.at(-1)?.parts, [
    { type: 'text', content: 'Where is my order?' },
    { type: 'file', mime_type: 'text/plain' },
  ]);
  assert.match(String(chat.attributes['gen_ai.system_instructions']), /plan/);
  const output = JSON.parse(String(chat.attributes['gen_ai.output.messages']));
  assert.equal(output[0].finish_reason, 'stop');
  assert.match(output[0].parts[0].content, /Where is my order/);
  for (const s of spans) assert.doesNotMatch(JSON.stringify(s.attributes), /stay out of the traces/);
});
