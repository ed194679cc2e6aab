// Agents that call tools (docs/guides/tools.md), end to end in one process: the scripted model asks for HTTP
// tools served on loopback, the step loop runs them, and the reply shows them where they belong: `tool_calls`
// on the assistant message and tool events in the stream for the API-key family; for the public family only
// where the agent exposes them. Failing and unknown tools become error results, not failed turns; max_steps
// ends the loop with a last call without tools.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { TestApp } from '../../helpers/app.ts';
import { useApp } from '../../helpers/app.ts';
import { openConversation, publicPath } from '../../helpers/conversations.ts';
import { buildSessionApp, createSession, type Message, send, textOf } from '../../helpers/sessions.ts';
import { parseSse } from '../../helpers/sse.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: { tool: string; call_id: string; turn_id: string; session_id: string; input: { value?: string } };
}

/** Tools on loopback: `/record` answers what it was given, `/fail` answers 500, `/deep` unwritable JSON. */
async function startTools(): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      let body: Received['body'];
      try {
        body = JSON.parse(text);
      } catch {
        res.writeHead(400).end();
        return;
      }
      received.push({ path: req.url ?? '', headers: req.headers, body });
      if (req.url === '/deep') {
        // Valid JSON nested deeper than JSON.stringify can write back.
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(`${'['.repeat(10_000)}${']'.repeat(10_000)}`);
        return;
      }
      if (req.url === '/fail') {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('the tool broke');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ recorded: body.input.value ?? null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, received, server };
}

const schema = { type: 'object', properties: { value: { type: 'string' } } };
const agentsUsing = (url: string) => [
  {
    id: 'toolbot',
    tools: [
      { name: 'record', description: 'Records a value', input_schema: schema, url: `${url}/record` },
      { name: 'broken', description: 'Always fails', input_schema: schema, url: `${url}/fail` },
      { name: 'deep', description: 'Answers unwritable JSON', input_schema: schema, url: `${url}/deep` },
    ],
  },
  {
    id: 'shown',
    expose_tools: true,
    tools: [{ name: 'record', description: 'Records a value', input_schema: schema, url: `${url}/record` }],
  },
  {
    id: 'onestep',
    max_steps: 1,
    tools: [{ name: 'record', description: 'Records a value', input_schema: schema, url: `${url}/record` }],
  },
];

let tools: Awaited<ReturnType<typeof startTools>>;
const t: TestApp = useApp(async () => {
  tools = await startTools();
  return buildSessionApp({}, agentsUsing(tools.url));
});
after(() => new Promise((resolve) => tools.server.close(resolve)));

type Reply = Message & { stop_reason: string | null };

async function sendTo(agent: string, content: string, headers: Record<string, string> = {}) {
  const session = await createSession(t, agent);
  const res = await send(t, session.id, { content }, headers);
  assert.equal(res.statusCode, 201, res.body);
  return { session, reply: res.json().agent_message as Reply };
}

const callsTo = (path: string, since: number) => tools.received.slice(since).filter((r) => r.path === path);

describe('a turn whose model calls a tool', () => {
  test('runs the tool once with its Idempotency-Key and answers with its result and tool_calls', async () => {
    const since = tools.received.length;
    const { session, reply } = await sendTo('toolbot', 'Note this [[tool:record {"value":"v1"}]]');
    const [call] = reply.tool_calls ?? [];
    assert.ok(call, JSON.stringify(reply));
    assert.equal(reply.tool_calls?.length, 1);
    assert.deepEqual(
      [call.name, call.input, call.status, call.output],
      ['record', { value: 'v1' }, 'ok', { recorded: 'v1' }],
    );
    assert.match(call.id, /^call_/);
    assert.equal(reply.stop_reason, 'end');
    assert.match(
      textOf(reply),
      /^Let me use record\.\n\nHello! You said: .*Tools: record ok \{"recorded":"v1"\}\.$/,
    );

    const seen = callsTo('/record', since);
    assert.equal(seen.length, 1);
    const [request] = seen;
    assert.equal(request?.body.call_id, call.id);
    assert.equal(request?.body.session_id, session.id);
    assert.equal(request?.headers['idempotency-key'], `${request?.body.turn_id}:${call.id}`);

    const stored = (await t.store.listMessages('t1', session.id, { limit: 10, offset: 0 }))?.items ?? [];
    assert.deepEqual(
      stored.map((m) => m.role),
      ['user', 'assistant'],
      'the steps are not messages: one reply',
    );
    const turnId = request?.body.turn_id ?? '';
    const committed = await t.store.turnToolCalls(session.id, turnId);
    assert.deepEqual(
      committed.map((c) => [c.id, c.step, c.status]),
      [[call.id, 1, 'ok']],
    );
  });

  test('runs the calls of one step in parallel and lists them in the order the model asked', async () => {
    const { reply } = await sendTo('toolbot', '[[tool:record {"value":"a"}]] [[tool:record {"value":"b"}]]');
    assert.deepEqual(
      reply.tool_calls?.map((c) => c.input),
      [{ value: 'a' }, { value: 'b' }],
    );
  });

  test('keeps and makes at most 16 calls of one step', async () => {
    const since = tools.received.length;
    const asks = Array.from({ length: 40 }, (_, i) => `[[tool:record {"value":"${i}"}]]`).join(' ');
    const { reply } = await sendTo('toolbot', asks);
    assert.equal(callsTo('/record', since).length, 16);
    assert.deepEqual(
      reply.tool_calls?.map((c) => c.input),
      Array.from({ length: 16 }, (_, i) => ({ value: String(i) })),
    );
  });

  test('gives a failing tool to the model as an error result, and the turn still answers', async () => {
    const { reply } = await sendTo('toolbot', '[[tool:broken {"value":"x"}]]');
    const [call] = reply.tool_calls ?? [];
    assert.equal(call?.status, 'error');
    assert.deepEqual(call?.output, { error: 'status', status: 500, message: 'the tool broke' });
    assert.match(textOf(reply), /Tools: broken error/);
  });

  test('gives a result too deeply nested to store to the model as an error result', async () => {
    const { reply } = await sendTo('toolbot', '[[tool:deep]]');
    assert.deepEqual(reply.tool_calls?.[0]?.output, {
      error: 'failed',
      message: 'The tool gave no usable result.',
    });
  });

  test('answers a call whose input the model botched with an error result, without calling the tool', async () => {
    const since = tools.received.length;
    const { reply } = await sendTo('toolbot', '[[tool:record {value: not json}]]');
    const [call] = reply.tool_calls ?? [];
    assert.deepEqual([call?.status, call?.input], ['error', {}]);
    assert.equal((call?.output as { error?: string } | undefined)?.error, 'invalid_input');
    assert.equal(callsTo('/record', since).length, 0);
  });

  test('answers a call of a tool the agent does not have with an error result', async () => {
    const { reply } = await sendTo('toolbot', '[[tool:nonesuch]]');
    const [call] = reply.tool_calls ?? [];
    assert.equal(call?.status, 'error');
    assert.equal((call?.output as { error?: string } | undefined)?.error, 'unknown_tool');
    await sendTo('toolbot', '[[tool:record {"value":"counted"}]]');
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /parley_tool_calls_total\{tool="unknown",outcome="error"\} [1-9]/);
    assert.match(metrics.body, /parley_tool_calls_total\{tool="record",outcome="ok"\} [1-9]/);
    assert.match(metrics.body, /parley_tool_duration_seconds_count\{tool="record"\} [1-9]/);
  });

  test('stops offering tools at max_steps and calls the model once more, ending with max_steps', async () => {
    const since = tools.received.length;
    const { reply } = await sendTo(
      'onestep',
      '[[tool:record {"value":"1"}]] [[tool@2:record {"value":"2"}]]',
    );
    assert.equal(callsTo('/record', since).length, 1, 'the second step was not allowed');
    assert.equal(reply.stop_reason, 'max_steps');
    assert.match(textOf(reply), /Tools: record ok/);
  });

  test('replays a finished tool turn under its Idempotency-Key without calling the tool again', async () => {
    const session = await createSession(t, 'toolbot');
    const body = { content: '[[tool:record {"value":"once"}]]' };
    const headers = { 'idempotency-key': 'tool-replay-1' };
    const first = await send(t, session.id, body, headers);
    const since = tools.received.length;
    const again = await send(t, session.id, body, headers);
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    assert.equal(callsTo('/record', since).length, 0);
  });
});

describe('a streamed tool turn', () => {
  let conversation: Awaited<ReturnType<typeof openConversation>>;
  before(async () => {
    conversation = await openConversation(t, 'toolbot');
  });

  const stream = async (url: string, headers: Record<string, string>) => {
    const res = await t.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify({ content: 'Go [[tool:record {"value":"s"}]]' }),
    });
    assert.equal(res.statusCode, 200, res.body);
    return parseSse(res.body).events;
  };

  test('sends tool.started and tool.completed between the steps, with ids that only grow', async () => {
    const session = await createSession(t, 'toolbot');
    const events = await stream(`/v1/agents/sessions/${session.id}/messages/stream`, {
      'x-api-key': t.apiKey,
    });
    const names = events.map((e) => e.event);
    const started = names.indexOf('tool.started');
    const completed = names.indexOf('tool.completed');
    assert.ok(started > 0 && completed > started, names.join(','));
    assert.equal(names.at(-2), 'message.completed');
    assert.equal(names.at(-1), 'turn.completed');
    const seqs = events.map((e) => Number(String(e.id).split(':')[1]));
    assert.deepEqual(
      seqs,
      seqs.toSorted((a, b) => a - b),
    );
    assert.equal(new Set(seqs).size, seqs.length);
    const finished = events.find((e) => e.event === 'tool.completed')?.data as unknown as {
      status: string;
      output: unknown;
    };
    assert.deepEqual([finished.status, finished.output], ['ok', { recorded: 's' }]);
    // What the deltas said is the stored text, the step separator included.
    const text = events
      .filter((e) => e.event === 'message.delta')
      .map((e) => (e.data as unknown as { delta: { text: string } }).delta.text)
      .join('');
    const message = events.find((e) => e.event === 'message.completed')?.data as unknown as {
      message: Reply;
    };
    assert.equal(text, textOf(message.message));
    assert.equal(message.message.tool_calls?.length, 1);
  });

  test('hides tool events and tool_calls from the public family of an agent that does not expose them', async () => {
    const token = { authorization: `Bearer ${conversation.session_token}` };
    const events = await stream(publicPath(conversation.id, '/messages/stream'), token);
    assert.deepEqual(
      events.filter((e) => e.event.startsWith('tool.')),
      [],
    );
    const message = events.find((e) => e.event === 'message.completed')?.data as unknown as {
      message: Reply;
    };
    assert.equal('tool_calls' in message.message, false);
    const listed = await t.app.inject({
      method: 'GET',
      url: publicPath(conversation.id, '/messages'),
      headers: token,
    });
    for (const m of listed.json().items) assert.equal('tool_calls' in m, false);
  });

  test('shows them to the public family of an agent with expose_tools', async () => {
    const shown = await openConversation(t, 'shown');
    const token = { authorization: `Bearer ${shown.session_token}` };
    const events = await stream(publicPath(shown.id, '/messages/stream'), token);
    assert.deepEqual(
      events.filter((e) => e.event.startsWith('tool.')).map((e) => e.event),
      ['tool.started', 'tool.completed'],
    );
    const message = events.find((e) => e.event === 'message.completed')?.data as unknown as {
      message: Reply;
    };
    assert.equal(message.message.tool_calls?.[0]?.name, 'record');
  });
});
