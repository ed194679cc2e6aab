// Streamed sends under wire conditions (docs/internals/decisions.md#turns and
// docs/internals/decisions.md#streaming): a model that drops its connection mid-reply, a client that goes
// away, a model that is silent for a while (ping comments), and a client that does not read while a large
// reply pours in (deltas merged, the turn stored regardless). The models are a fake OpenAI-compatible server
// on loopback; the app listens on a real port and is read as raw SSE bytes.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { useApp } from '../../helpers/app.ts';
import {
  allMessages,
  buildSessionApp,
  createSession,
  type Message,
  sleep,
  testAgents,
  textOf,
} from '../../helpers/sessions.ts';
import { type SseEvent, StreamReader } from '../../helpers/sse.ts';

// --- a fake OpenAI-compatible model server: what it does depends on the agent's `model` -----------------

const chunk = (content: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
/** The finish chunk every real server sends, then `[DONE]`. */
const DONE = `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;

/**
 * The 1 KiB pieces the `flood` model sends, each numbered so that order and loss are visible. 16 MiB: on
 * loopback the kernel's socket buffers alone take about 4 MB from a client that reads nothing (a little
 * more at times: with 8 MiB, 4,145 of 8,000 pieces once went out as events of their own before the server
 * was held back), so a reply of 3 MB would never hold the server back, and one of 8 MiB only barely.
 */
const FLOOD_PIECES = 16_000;
const floodPiece = (i: number) => `<${String(i).padStart(5, '0')}>`.padEnd(1024, 'x');
const floodText = Array.from({ length: FLOOD_PIECES }, (_, i) => floodPiece(i)).join('');

const fakeCalls = new Map<string, number>();

function openSse(res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** Sends two pieces, then destroys the socket in the middle of the stream. */
function cut(res: ServerResponse) {
  openSse(res);
  res.write(chunk('Partial '));
  res.write(chunk('answer'));
  setTimeout(() => res.socket?.destroy(), 50);
}

const models: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  cut: (_req, res) => cut(res),
  /** Drops the connection on its first call, answers in full afterwards. */
  flaky: (_req, res) => {
    if ((fakeCalls.get('flaky') ?? 0) === 1) return cut(res);
    openSse(res);
    res.end(`${chunk('Recovered ')}${chunk('after a cut.')}${DONE}`);
  },
  /** Silent for 2.5 s before its reply. */
  late: (req, res) => {
    openSse(res);
    const timer = setTimeout(() => res.end(`${chunk('Late ')}${chunk('reply.')}${DONE}`), 2500);
    req.socket.once('close', () => clearTimeout(timer));
  },
  /** FLOOD_PIECES pieces of 1 KiB, as fast as it can. */
  flood: (_req, res) => {
    openSse(res);
    for (let i = 0; i < FLOOD_PIECES; i++) res.write(chunk(floodPiece(i)));
    res.end(DONE);
  },
};

let fake: Server;

async function startFake(): Promise<string> {
  fake = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (piece: string) => {
      body += piece;
    });
    req.on('end', () => {
      const { model } = JSON.parse(body) as { model: string };
      fakeCalls.set(model, (fakeCalls.get(model) ?? 0) + 1);
      const behave = models[model];
      if (!behave) return res.writeHead(404).end();
      behave(req, res);
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const address = fake.address();
  assert.ok(address && typeof address === 'object');
  return `http://127.0.0.1:${address.port}/v1`;
}

// --- the app, listening -------------------------------------------------------------------------------

const dispatcher = new Agent();
// Registered before the app's hook: the client lets go of its connections before the app closes.
after(() => dispatcher.close());
let base: string;
// The catalogue names the fake's URL, so the fake starts first.
const t = useApp(
  async () => {
    const baseUrl = await startFake();
    const openai = (model: string, timeouts = { total_ms: 10_000, stall_ms: 1000 }) => ({
      id: model,
      provider: 'openai',
      model,
      base_url: baseUrl,
      timeouts,
    });
    return buildSessionApp({ PARLEY_SSE_PING_SECONDS: '1' }, [
      ...testAgents,
      openai('cut'),
      openai('flaky'),
      openai('late', { total_ms: 10_000, stall_ms: 5000 }),
      openai('flood'),
    ]);
  },
  async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
);

after(async () => {
  fake?.closeAllConnections();
  await new Promise((resolve) => fake?.close(resolve));
});

/** A streamed send on the API-key route; answers once the status and headers are in. */
async function stream(
  sessionId: string,
  body: unknown,
  options: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<StreamReader> {
  const res = await request(`${base}/v1/agents/sessions/${sessionId}/messages/stream`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey, ...options.headers },
    body: JSON.stringify(body),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const reader = new StreamReader(res.statusCode, res.headers, res.body);
  if (res.statusCode !== 200) assert.fail(`status ${res.statusCode}: ${await res.body.text()}`);
  return reader;
}

const deltaText = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === 'message.delta')
    .map((e) => e.data.delta?.text ?? '')
    .join('');

/**
 * Lists the session's messages until `done` holds (or `ms` passed); returns the last list. Every 100 ms: a
 * minute of polling stays within the key's rate limit (1,200 a minute), which 20 ms polls passed on a loaded
 * machine.
 */
async function pollMessages(sessionId: string, done: (messages: Message[]) => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  let messages = await allMessages(t, sessionId);
  while (!done(messages) && Date.now() < deadline) {
    await sleep(100);
    messages = await allMessages(t, sessionId);
  }
  return messages;
}

// --- the tests ----------------------------------------------------------------------------------------

describe('a model that fails in the middle of its reply', () => {
  test('the stream ends with turn.failed agent_unavailable and partial: true after the deltas it got, and the user message stays stored', async () => {
    const session = await createSession(t, 'cut');
    const reader = await stream(session.id, { content: 'Tell me everything' });
    const events = await reader.all();
    const names = events.map((e) => e.event);
    assert.equal(names[0], 'turn.started', names.join(','));
    assert.equal(names.at(-1), 'turn.failed', names.join(','));
    assert.ok(!names.includes('message.completed'), names.join(','));
    assert.ok(
      names.slice(1, -1).every((n) => n === 'message.delta'),
      names.join(','),
    );
    for (const event of events) assert.ok(event.id, `${event.event} has an id`);

    const turnId = events[0]?.data.turn_id;
    const sent = deltaText(events);
    assert.equal(sent, 'Partial answer');
    const failed = events.at(-1);
    assert.equal(failed?.data.turn_id, turnId);
    assert.equal(failed?.id, `${turnId}:${sent.length + 2}`);
    assert.equal(failed?.data.error?.code, 'agent_unavailable');
    assert.equal(failed?.data.error?.name, 'AgentUnavailableError');
    assert.equal(typeof failed?.data.error?.message, 'string');
    assert.equal(failed?.data.partial, true, 'the client is told to discard the partial text');

    const stored = await allMessages(t, session.id);
    assert.deepEqual(
      stored.map((m) => [m.id, m.role, textOf(m)]),
      [[events[0]?.data.user_message?.id, 'user', 'Tell me everything']],
    );
  });

  test('a retry with the same Idempotency-Key completes the same turn without storing the user message again', async () => {
    const session = await createSession(t, 'flaky');
    const headers = { 'idempotency-key': 'k-flaky' };
    const first = await (await stream(session.id, { content: 'Once' }, { headers })).all();
    assert.equal(first.at(-1)?.event, 'turn.failed');

    const retry = await stream(session.id, { content: 'Once' }, { headers });
    const events = await retry.all();
    assert.deepEqual(
      events.map((e) => e.event).filter((n) => n !== 'message.delta'),
      ['turn.started', 'message.completed', 'turn.completed'],
    );
    assert.equal(events[0]?.data.turn_id, first[0]?.data.turn_id, 'the same turn');
    assert.equal(events[0]?.data.user_message?.id, first[0]?.data.user_message?.id, 'the same user message');
    assert.equal(deltaText(events), 'Recovered after a cut.');
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => [m.role, textOf(m)]),
      [
        ['user', 'Once'],
        ['assistant', 'Recovered after a cut.'],
      ],
    );
  });
});

describe('a client that disconnects', () => {
  test('going away after the first delta does not cancel the turn: the complete reply is stored afterwards', async () => {
    const session = await createSession(t, 'slow');
    // About 150 tokens at 2 ms each: the turn is still running well after the first delta.
    const content = Array.from({ length: 150 }, (_, i) => `w${i}`).join(' ');
    const controller = new AbortController();
    const reader = await stream(session.id, { content }, { signal: controller.signal });
    const events = await reader.until((seen) => seen.some((e) => e.event === 'message.delta'));
    assert.ok(
      events.some((e) => e.event === 'message.delta'),
      events.map((e) => e.event).join(','),
    );
    controller.abort();
    reader.body.on('error', () => {});

    const right = await allMessages(t, session.id);
    assert.deepEqual(
      right.map((m) => m.role),
      ['user'],
      'the reply was not complete when the client left',
    );

    const stored = await pollMessages(session.id, (messages) => messages.length === 2);
    const reply = stored[1];
    assert.ok(reply, 'the reply is stored');
    assert.equal(reply.role, 'assistant');
    assert.equal(reply.id, events[1]?.data.message_id, 'it is the message the stream was writing');
    assert.equal(textOf(reply), `Hello! You said: "${content}".`);
  });
});

describe('a model that is silent for a while', () => {
  test('with PARLEY_SSE_PING_SECONDS=1 the stream carries `: ping` comment lines while it waits', async () => {
    const session = await createSession(t, 'late');
    const reader = await stream(session.id, { content: 'Take your time' });
    const events = await reader.all();
    const { raw } = reader;
    assert.match(raw, /(^|\n): ping\n\n/, raw);
    const ping = raw.indexOf(': ping');
    assert.ok(raw.indexOf('event: turn.started') < ping, 'pinged after the turn started');
    assert.ok(ping < raw.indexOf('event: message.delta'), 'pinged before the first delta');
    assert.deepEqual(
      events.map((e) => e.event).filter((n) => n !== 'message.delta'),
      ['turn.started', 'message.completed', 'turn.completed'],
    );
    assert.equal(deltaText(events), 'Late reply.');
    assert.equal(
      events.at(-2)?.data.message && textOf(events.at(-2)?.data.message as Message),
      'Late reply.',
    );
  });
});

describe('a client that does not read while a large reply arrives', () => {
  let sessionId: string;
  let storedWhilePaused: Message[];
  let events: SseEvent[];
  let raw: string;

  before(async () => {
    sessionId = (await createSession(t, 'flood')).id;
    const reader = await stream(sessionId, { content: 'Say a lot' });
    const paused = Date.now();
    // Not a byte is read from the body here.
    // A bound for a loaded machine: 16 MiB of reply is a few seconds of CPU when the suite runs alongside.
    storedWhilePaused = await pollMessages(sessionId, (messages) => messages.length === 2, 60_000);
    const left = 1000 - (Date.now() - paused);
    if (left > 0) await sleep(left);
    events = await reader.all();
    raw = reader.raw;
  });

  test('the turn finishes and is stored while the client is not reading', () => {
    assert.deepEqual(
      storedWhilePaused.map((m) => m.role),
      ['user', 'assistant'],
    );
    const reply = storedWhilePaused[1];
    assert.ok(reply);
    assert.equal(textOf(reply).length, floodText.length);
    assert.ok(textOf(reply) === floodText, 'the stored reply is the whole text, in order');
  });

  test('once read, the concatenated deltas equal the completed text, the whole reply', () => {
    const names = events.map((e) => e.event);
    assert.equal(names[0], 'turn.started');
    assert.deepEqual(names.slice(-2), ['message.completed', 'turn.completed']);
    const text = deltaText(events);
    const completed = events.at(-2)?.data.message;
    assert.ok(completed);
    assert.ok(text === textOf(completed), 'the deltas add up to the completed text');
    assert.ok(text === floodText, 'the completed text is what the model sent');
    assert.equal(completed.id, storedWhilePaused[1]?.id);
  });

  test('the deltas were merged while the reader was behind: far fewer delta events than model pieces', () => {
    const deltas = events.filter((e) => e.event === 'message.delta');
    assert.ok(deltas.length > 0);
    assert.ok(deltas.length < FLOOD_PIECES / 2, `${deltas.length} delta events for ${FLOOD_PIECES} pieces`);
    // What was held back while nothing was read comes as one delta far larger than the stream's buffer.
    const largest = Math.max(...deltas.map((d) => d.data.delta?.text.length ?? 0));
    assert.ok(largest >= 256 * 1024, `the largest delta holds ${largest} characters`);
  });

  test('the event ids still follow the text: the last delta is length + 1, then + 2 and + 3', () => {
    const turnId = events[0]?.data.turn_id;
    let length = 0;
    for (const event of events.filter((e) => e.event === 'message.delta')) {
      length += event.data.delta?.text.length ?? 0;
      assert.equal(event.id, `${turnId}:${length + 1}`);
    }
    assert.equal(events.at(-2)?.id, `${turnId}:${floodText.length + 2}`);
    assert.equal(events.at(-1)?.id, `${turnId}:${floodText.length + 3}`);
    assert.ok(raw.length > floodText.length);
  });
});
