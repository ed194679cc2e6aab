// The AI SDK chat routes (docs/guides/ai-sdk.md) over a real listening server, read with the SDK's own
// client: DefaultChatTransport sends the body useChat sends and parses the UI message stream (its chunk
// schema), and readUIMessageStream builds the assistant message from the chunks. The reply's text is what
// Parley stored, the user message's id makes the SDK's retries replays, refusals before the stream are JSON
// errors, tool calls show as dynamic tools where the caller sees them, and random bodies never get a 5xx.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import {
  APICallError,
  DefaultChatTransport,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import fc from 'fast-check';
import { AppError } from '../../../src/errors.ts';
import { TurnChunks } from '../../../src/http/turns/chat-chunks.ts';
import { type TestApp, useApp } from '../../helpers/app.ts';
import { openConversation, publicPath } from '../../helpers/conversations.ts';
import {
  allMessages,
  buildSessionApp,
  client,
  createSession,
  type Message,
  testAgents,
  textOf,
  upload,
} from '../../helpers/sessions.ts';

// --- tools on loopback and the app, listening ----------------------------------------------------------

/** A tool server: `/record` answers what it was given, `/fail` answers 500. */
async function startTools(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (piece) => {
      text += piece;
    });
    req.on('end', () => {
      if (req.url === '/fail') {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('the tool broke');
        return;
      }
      const input = JSON.parse(text).input ?? {};
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ recorded: input.value }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const schema = { type: 'object', properties: { value: { type: 'string' } } };
const toolsAt = (url: string) => [
  { name: 'record', description: 'Records a value', input_schema: schema, url: `${url}/record` },
  { name: 'broken', description: 'Always fails', input_schema: schema, url: `${url}/fail` },
];

let tools: { url: string; server: Server };
let base: string;
const t: TestApp = useApp(async () => {
  tools = await startTools();
  // No rate limits that the random bodies below would reach.
  const app = await buildSessionApp(
    { PARLEY_RATE_LIMIT_KEY: '1000000', PARLEY_RATE_LIMIT_TOKEN: '1000000' },
    [
      ...testAgents,
      { id: 'toolbot', tools: toolsAt(tools.url) },
      { id: 'shown', expose_tools: true, tools: toolsAt(tools.url) },
    ],
  );
  base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  return app;
});
after(() => new Promise((resolve) => tools.server.close(resolve)));

// --- the SDK's client ------------------------------------------------------------------------------------

interface Answer {
  status: number;
  headers: Headers;
  chunks: UIMessageChunk[];
  /** The assistant message as readUIMessageStream builds it from the chunks. */
  message: UIMessage | undefined;
  /** Errors the stream told (its `error` chunk). */
  errors: string[];
}

/** A user message as useChat makes it. */
const userMessage = (id: string, text: string, more: UIMessage['parts'] = []): UIMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }, ...more],
});

/**
 * Sends `messages` to `path` through DefaultChatTransport (as useChat does) and reads the whole answer; a
 * refusal rejects with the SDK's APICallError.
 */
async function chat(
  path: string,
  messages: UIMessage[],
  headers: Record<string, string>,
  trigger: 'submit-message' | 'regenerate-message' = 'submit-message',
): Promise<Answer> {
  let response: Response | undefined;
  const transport = new DefaultChatTransport<UIMessage>({
    api: `${base}${path}`,
    headers,
    fetch: async (input, init) => {
      response = await fetch(input, init);
      return response;
    },
  });
  const stream = await transport.sendMessages({
    chatId: 'chat-1',
    messages,
    trigger,
    messageId: undefined,
    abortSignal: undefined,
  });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const errors: string[] = [];
  let message: UIMessage | undefined;
  const built = readUIMessageStream<UIMessage>({
    stream: ReadableStream.from(chunks),
    onError: (err) => errors.push(err instanceof Error ? err.message : String(err)),
  });
  for await (const state of built) message = state;
  assert.ok(response);
  return { status: response.status, headers: response.headers, chunks, message, errors };
}

const chatPath = (sessionId: string) => `/v1/agents/sessions/${sessionId}/chat`;
const keyed = (headers: Record<string, string> = {}): Record<string, string> => ({
  'x-api-key': t.apiKey,
  ...headers,
});

/** The chunk types of an answer, its text deltas folded into one `text-delta…`. */
const shapeOf = (chunks: UIMessageChunk[]) =>
  chunks.map((c) => c.type).filter((type, i, all) => !(type === 'text-delta' && all[i - 1] === 'text-delta'));

/** The assistant message's metadata (what start, finish and message-metadata chunks gave). */
const metadataOf = (message: UIMessage | undefined): Record<string, unknown> => {
  const metadata = message?.metadata;
  return typeof metadata === 'object' && metadata !== null
    ? Object.fromEntries(Object.entries(metadata))
    : {};
};

const textParts = (message: UIMessage | undefined) =>
  (message?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

/** The reply of the scripted agent to `said`, for a session without user or context. */
const scripted = (said: string) => `Hello! You said: "${said}".`;

/** The refusal the transport rejects with, and its JSON error. */
async function refusal(answer: Promise<Answer>) {
  const err = await answer.then(
    () => assert.fail('the chat was not refused'),
    (e: unknown) => e,
  );
  assert.ok(APICallError.isInstance(err), String(err));
  const body = JSON.parse(err.responseBody ?? '');
  return { status: err.statusCode, error: body.error, body };
}

// --- the tests -------------------------------------------------------------------------------------------

describe('a chat on the API-key route', () => {
  test("streams the reply as the UI message stream, and the assistant's text is what Parley stored", async () => {
    const session = await createSession(t);
    const answer = await chat(chatPath(session.id), [userMessage('u-1', 'Hello chat')], keyed());
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
    assert.match(String(answer.headers.get('content-type')), /^text\/event-stream/);
    assert.equal(answer.headers.get('idempotent-replayed'), null);
    assert.deepEqual(shapeOf(answer.chunks), [
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    assert.deepEqual(answer.errors, []);

    const stored = await allMessages(t, session.id);
    assert.deepEqual(
      stored.map((m) => [m.role, textOf(m)]),
      [
        ['user', 'Hello chat'],
        ['assistant', scripted('Hello chat')],
      ],
    );
    const reply = stored[1];
    assert.ok(reply);
    assert.equal(answer.message?.id, reply.id, 'the message id is the stored reply id');
    assert.equal(answer.message?.role, 'assistant');
    assert.equal(textParts(answer.message), textOf(reply));
    const finish = answer.chunks.at(-1);
    assert.deepEqual(finish?.type === 'finish' && finish.finishReason, 'stop');
    const { turn_id, usage, ...metadata } = metadataOf(answer.message);
    assert.match(String(turn_id), /^turn_/);
    assert.ok(usage && typeof usage === 'object', 'the turn reports its usage');
    assert.deepEqual(metadata, {
      session_id: session.id,
      stop_reason: 'end',
      conversation_status: 'active',
      turn_status: 'completed',
    });
  });

  test('while people handle the session, stores the message and ends without a reply, saying who answers', async () => {
    const session = await createSession(t);
    const handed = await fetch(`${base}/v1/agents/sessions/${session.id}/handoff`, {
      method: 'POST',
      headers: keyed({ 'content-type': 'application/json' }),
      body: '{}',
    });
    assert.equal(handed.status, 200, await handed.text());
    const answer = await chat(chatPath(session.id), [userMessage('u-humans', 'A person?')], keyed());
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.errors, []);
    assert.equal(textParts(answer.message), '');
    assert.equal(metadataOf(answer.message).turn_status, 'handled_by_humans');
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => [m.role, textOf(m)]),
      [['user', 'A person?']],
    );
  });

  test('replays a second identical request (the same user message id) without a second turn', async () => {
    const session = await createSession(t);
    const messages = [userMessage('u-replay', 'Only once')];
    const first = await chat(chatPath(session.id), messages, keyed());
    const again = await chat(chatPath(session.id), messages, keyed());
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.message?.id, first.message?.id);
    assert.equal(textParts(again.message), textParts(first.message));
    assert.equal(textParts(again.message), scripted('Only once'));
    assert.deepEqual(shapeOf(again.chunks), shapeOf(first.chunks));
    assert.equal((await allMessages(t, session.id)).length, 2, 'one user message and one reply');

    // A regenerate sends the same user message again: Parley cannot rewrite its history, so it replays.
    const regenerated = await chat(chatPath(session.id), messages, keyed(), 'regenerate-message');
    assert.equal(regenerated.message?.id, first.message?.id);
    assert.equal((await allMessages(t, session.id)).length, 2);
  });

  test('takes the Idempotency-Key header over the user message id', async () => {
    const session = await createSession(t);
    const messages = [userMessage('u-same', 'Twice on purpose')];
    const first = await chat(chatPath(session.id), messages, keyed({ 'idempotency-key': 'key-1' }));
    const second = await chat(chatPath(session.id), messages, keyed({ 'idempotency-key': 'key-2' }));
    assert.notEqual(second.message?.id, first.message?.id);
    assert.equal(second.headers.get('idempotent-replayed'), null);
    assert.equal((await allMessages(t, session.id)).length, 4);
    const replay = await chat(chatPath(session.id), messages, keyed({ 'idempotency-key': 'key-1' }));
    assert.equal(replay.message?.id, first.message?.id);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  });

  test('refuses the same user message id with other text as a reused Idempotency-Key (409, JSON)', async () => {
    const session = await createSession(t);
    await chat(chatPath(session.id), [userMessage('u-edit', 'First words')], keyed());
    const { status, error } = await refusal(
      chat(chatPath(session.id), [userMessage('u-edit', 'Edited words')], keyed()),
    );
    assert.equal(status, 409);
    assert.equal(error.code, 'idempotency_key_reused');
  });

  test('sends only the newest user message: the session holds the history', async () => {
    const session = await createSession(t);
    const history: UIMessage[] = [
      userMessage('u-old', 'An old question'),
      {
        id: 'a-old',
        role: 'assistant',
        parts: [{ type: 'step-start' }, { type: 'text', text: 'Old answer' }],
      },
      userMessage('u-new', 'The new question'),
      { id: 'a-partial', role: 'assistant', parts: [] },
    ];
    const answer = await chat(chatPath(session.id), history, keyed());
    assert.equal(textParts(answer.message), scripted('The new question'));
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => [m.role, textOf(m)]),
      [
        ['user', 'The new question'],
        ['assistant', scripted('The new question')],
      ],
    );
  });

  test('sends a file part whose url is a Parley file id as a file block', async () => {
    const fileId = await upload(t, Buffer.from('hello file'), 'note.txt', 'text/plain');
    const session = await createSession(t);
    const message = userMessage('u-file', 'Read this', [
      { type: 'file', mediaType: 'text/plain', filename: 'note.txt', url: fileId },
    ]);
    const answer = await chat(chatPath(session.id), [message], keyed());
    assert.match(textParts(answer.message), /Attachments: 1\./);
    const [sent] = await allMessages(t, session.id);
    assert.deepEqual(sent?.content, [
      { type: 'text', text: 'Read this' },
      { type: 'file', file_id: fileId },
    ]);
  });

  test("names the file part of a file it does not know by the chat body's own place in the 404", async () => {
    const session = await createSession(t);
    const earlier = { id: 'a-0', role: 'assistant' as const, parts: [{ type: 'text' as const, text: 'Hi' }] };
    const message = userMessage('u-missing', 'Read this', [
      { type: 'file', mediaType: 'text/plain', filename: 'gone.txt', url: 'file_doesnotexist' },
    ]);
    const { status, error } = await refusal(chat(chatPath(session.id), [earlier, message], keyed()));
    assert.equal(status, 404);
    assert.equal(error.code, 'file_not_found');
    assert.deepEqual(error.context, { file_id: 'file_doesnotexist', param: 'body.messages.1.parts.1.url' });
  });

  test('refuses a closed session before the stream with a JSON 409', async () => {
    const session = await createSession(t);
    const closed = await client(t).post(`/v1/agents/sessions/${session.id}/terminate`, {});
    assert.equal(closed.statusCode, 200, closed.body);
    const { status, error } = await refusal(
      chat(chatPath(session.id), [userMessage('u-late', 'Anyone there?')], keyed()),
    );
    assert.equal(status, 409);
    assert.equal(error.code, 'session_closed');

    const res = await fetch(`${base}${chatPath(session.id)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...keyed() },
      body: JSON.stringify({
        id: 'c',
        messages: [userMessage('u-late', 'Anyone there?')],
        trigger: 'submit-message',
      }),
    });
    assert.equal(res.status, 409);
    assert.match(String(res.headers.get('content-type')), /^application\/json/);
    assert.equal(res.headers.get('x-vercel-ai-ui-message-stream'), null);
  });

  test('refuses an unknown session (404) and a missing key (401) as JSON', async () => {
    const unknown = await refusal(chat(chatPath('ses_nope'), [userMessage('u-1', 'Hi')], keyed()));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.error.code, 'session_not_found');
    const session = await createSession(t);
    const anonymous = await refusal(chat(chatPath(session.id), [userMessage('u-1', 'Hi')], {}));
    assert.equal(anonymous.status, 401);
  });

  test('answers 422 for what cannot be sent, naming where it is', async () => {
    const session = await createSession(t);
    const post = (body: unknown) => client(t).post(chatPath(session.id), body);
    const locs = async (body: unknown) => {
      const res = await post(body);
      assert.equal(res.statusCode, 422, res.body);
      return (res.json().detail as { loc: unknown[]; type: string }[]).map((d) => [d.loc.join('.'), d.type]);
    };
    assert.deepEqual(await locs({ id: 'c' }), [['body.messages', 'missing']]);
    assert.deepEqual(await locs({ messages: [] }), [['body.messages', 'too_short']]);
    assert.deepEqual(
      await locs({ messages: [{ id: 'a', role: 'assistant', parts: [{ type: 'text', text: 'hi' }] }] }),
      [['body.messages', 'value_error']],
    );
    assert.deepEqual(
      await locs({
        messages: [
          userMessage('u-1', 'Look', [
            { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,AAAA' },
          ]),
        ],
      }),
      [['body.messages.0.parts.1.url', 'value_error']],
    );
    assert.deepEqual(
      await locs({ messages: [{ id: 'u-1', role: 'user', parts: [{ type: 'text', text: '' }] }] }),
      [['body.messages.0.parts', 'too_short']],
    );
    assert.deepEqual(await locs({ messages: [userMessage('é', 'Hi')] }), [
      ['body.messages.0.id', 'string_pattern_mismatch'],
    ]);
    assert.deepEqual(await locs({ messages: [userMessage('u-1', 'x'.repeat(32_001))] }), [
      ['body.messages.0.parts.0.text', 'string_too_long'],
    ]);
    assert.equal((await allMessages(t, session.id)).length, 0, 'nothing was sent');
  });

  test('ignores fields it does not use, as a later SDK may send more', async () => {
    const session = await createSession(t);
    const res = await client(t).post(chatPath(session.id), {
      id: 'c',
      trigger: 'submit-message',
      messageId: 'm-1',
      somethingNew: { a: 1 },
      messages: [{ ...userMessage('u-1', 'Hi'), metadata: { anything: true }, extra: 1 }],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /data: \[DONE\]\n\n$/);
  });
});

describe('a chat turn that fails after the stream started', () => {
  test('ends with an error chunk, after the error as message metadata; the user message stays stored', async () => {
    const session = await createSession(t);
    const answer = await chat(chatPath(session.id), [userMessage('u-fail', 'Please [[fail]] now')], keyed());
    assert.equal(answer.status, 200);
    assert.deepEqual(
      answer.chunks.map((c) => c.type),
      ['start', 'start-step', 'message-metadata', 'error'],
    );
    assert.equal(answer.errors.length, 1);
    const { error, partial } = metadataOf(answer.message);
    assert.deepEqual(
      error && typeof error === 'object' && 'code' in error && error.code,
      'agent_unavailable',
    );
    assert.equal(partial, false);
    assert.deepEqual(
      (await allMessages(t, session.id)).map((m) => m.role),
      ['user'],
    );
  });
});

describe('the chunks of a turn', () => {
  const readAll = async (stream: ReadableStream<UIMessageChunk>) => {
    const read: UIMessageChunk[] = [];
    for await (const chunk of stream) read.push(chunk);
    return read;
  };
  const deltasOf = (chunks: UIMessageChunk[]) =>
    chunks.flatMap((c) => (c.type === 'text-delta' ? [c.delta] : []));

  test('are merged into fewer text deltas while the reader is behind, and no text is lost', async () => {
    const chunks = new TurnChunks(false);
    chunks.start('msg_1', {});
    const pieces = Array.from({ length: 2000 }, (_, i) => `${i} `);
    for (const piece of pieces) chunks.text(piece);
    chunks.finish('stop', {});
    const read = await readAll(chunks.stream);
    const deltas = deltasOf(read);
    assert.ok(deltas.length < 100, `${deltas.length} deltas for ${pieces.length} pieces`);
    assert.equal(deltas.join(''), pieces.join(''));
    assert.deepEqual(shapeOf(read), [
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
  });

  test('end a failure with the error as metadata, partial once text went out, then the error chunk', async () => {
    const chunks = new TurnChunks(false);
    chunks.start('msg_1', {});
    chunks.text('Half an ans');
    chunks.fail(new AppError('agent_timeout'));
    const read = await readAll(chunks.stream);
    assert.deepEqual(
      read.map((c) => c.type),
      ['start', 'start-step', 'text-start', 'text-delta', 'message-metadata', 'error'],
    );
    const metadata = read[4]?.type === 'message-metadata' ? read[4].messageMetadata : undefined;
    assert.deepEqual(metadata, {
      error: {
        code: 'agent_timeout',
        name: 'AgentTimeoutError',
        message: 'The agent did not reply in time.',
      },
      partial: true,
    });
  });
});

describe('tool calls in a chat', () => {
  const toolCall = '[[tool:record {"value":"v1"}]] [[tool:broken {"value":"x"}]]';

  test('show as dynamic tools on the API-key route, the step loop as steps', async () => {
    const session = await createSession(t, 'toolbot');
    const answer = await chat(chatPath(session.id), [userMessage('u-tools', toolCall)], keyed());
    assert.deepEqual(shapeOf(answer.chunks), [
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'tool-input-available',
      'tool-input-available',
      'tool-output-available',
      'tool-output-error',
      'finish-step',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    const [reply] = (await allMessages(t, session.id)).slice(1) as Message[];
    assert.ok(reply);
    assert.equal(textParts(answer.message), textOf(reply));
    const toolParts = (answer.message?.parts ?? []).flatMap((p) => (p.type === 'dynamic-tool' ? [p] : []));
    assert.deepEqual(
      toolParts.map((p) => [p.toolName, p.state, p.input]),
      [
        ['record', 'output-available', { value: 'v1' }],
        ['broken', 'output-error', { value: 'x' }],
      ],
    );
    assert.deepEqual(
      toolParts.map((p) => p.toolCallId),
      reply.tool_calls?.map((c) => c.id),
    );
    const [recorded] = toolParts;
    assert.deepEqual(recorded?.state === 'output-available' && recorded.output, { recorded: 'v1' });

    // Replayed, the same calls and text come back.
    const again = await chat(chatPath(session.id), [userMessage('u-tools', toolCall)], keyed());
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(textParts(again.message), textOf(reply));
    assert.deepEqual(
      (again.message?.parts ?? []).flatMap((p) =>
        p.type === 'dynamic-tool' ? [[p.toolCallId, p.state]] : [],
      ),
      toolParts.map((p) => [p.toolCallId, p.state]),
    );
  });

  test('are hidden on the public route unless the agent exposes them', async () => {
    const hidden = await openConversation(t, 'toolbot');
    const quiet = await chat(publicPath(hidden.id, '/chat'), [userMessage('u-1', toolCall)], {
      authorization: `Bearer ${hidden.session_token}`,
    });
    assert.ok(
      quiet.chunks.every((c) => !c.type.startsWith('tool-')),
      JSON.stringify(shapeOf(quiet.chunks)),
    );
    assert.match(textParts(quiet.message), /Tools: record ok/);

    const exposed = await openConversation(t, 'shown');
    const shown = await chat(publicPath(exposed.id, '/chat'), [userMessage('u-1', toolCall)], {
      authorization: `Bearer ${exposed.session_token}`,
    });
    assert.equal(shown.message?.parts.filter((p) => p.type === 'dynamic-tool').length, 2);
  });
});

describe('a chat on the public route', () => {
  test('works with the session token, and the reply is what the conversation stored', async () => {
    const conversation = await openConversation(t);
    const answer = await chat(publicPath(conversation.id, '/chat'), [userMessage('u-pub', 'Hello public')], {
      authorization: `Bearer ${conversation.session_token}`,
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
    const page = await conversation.pub.get('/messages');
    assert.equal(page.statusCode, 200, page.body);
    const items: Message[] = page.json().items;
    assert.deepEqual(
      items.map((m) => [m.role, textOf(m)]),
      [
        ['user', 'Hello public'],
        ['assistant', scripted('Hello public')],
      ],
    );
    assert.equal(answer.message?.id, items[1]?.id);
    assert.equal(textParts(answer.message), textOf(items[1] as Message));

    const again = await chat(publicPath(conversation.id, '/chat'), [userMessage('u-pub', 'Hello public')], {
      authorization: `Bearer ${conversation.session_token}`,
    });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal((await conversation.pub.get('/messages')).json().items.length, 2);
  });

  test('refuses without a token (401) and on a closed conversation (409) as JSON', async () => {
    const conversation = await openConversation(t);
    const anonymous = await refusal(
      chat(publicPath(conversation.id, '/chat'), [userMessage('u-1', 'Hi')], {}),
    );
    assert.equal(anonymous.status, 401);
    const closed = await conversation.pub.post('/terminate', {});
    assert.equal(closed.statusCode, 200, closed.body);
    const late = await refusal(
      chat(publicPath(conversation.id, '/chat'), [userMessage('u-1', 'Hi')], {
        authorization: `Bearer ${conversation.session_token}`,
      }),
    );
    assert.equal(late.status, 409);
  });
});

describe('random chat bodies', () => {
  const part = fc.oneof(
    fc.record({ type: fc.constant('text'), text: fc.oneof(fc.string(), fc.constant(''), fc.integer()) }),
    fc.record({
      type: fc.constant('file'),
      url: fc.oneof(fc.string(), fc.constant('file_nope'), fc.constant('data:,x')),
      mediaType: fc.oneof(fc.constant('image/png'), fc.constant('text/plain'), fc.string()),
    }),
    fc.record({ type: fc.string() }, { requiredKeys: [] }),
    fc.jsonValue({ maxDepth: 2 }),
  );
  const message = fc.record(
    {
      id: fc.oneof(fc.string({ maxLength: 300 }), fc.integer()),
      role: fc.oneof(fc.constantFrom('user', 'assistant', 'system'), fc.string()),
      parts: fc.oneof(fc.array(part, { maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })),
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(
    fc.record(
      {
        id: fc.string(),
        messages: fc.array(message, { maxLength: 4 }),
        trigger: fc.string(),
        extra: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue({ maxDepth: 3 }),
  );

  test('get a stream, a JSON error or a 422, never a 5xx, on both routes', async () => {
    const session = await createSession(t);
    const conversation = await openConversation(t);
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), async (payload, publicRoute) => {
        const res = await t.app.inject({
          method: 'POST',
          url: publicRoute ? publicPath(conversation.id, '/chat') : chatPath(session.id),
          headers: publicRoute
            ? { authorization: `Bearer ${conversation.session_token}`, 'content-type': 'application/json' }
            : { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
        const where = `${JSON.stringify(payload).slice(0, 500)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
        assert.ok(res.statusCode < 500, where);
        if (res.statusCode === 200) {
          assert.equal(res.headers['x-vercel-ai-ui-message-stream'], 'v1', where);
          assert.match(res.body, /data: \[DONE\]\n\n$/, where);
        } else {
          assert.match(String(res.headers['content-type']), /^application\/json/, where);
          const answer = res.json();
          assert.ok(res.statusCode === 422 ? Array.isArray(answer.detail) : answer.error?.code, where);
        }
      }),
      { numRuns: 150 },
    );
  });
});
