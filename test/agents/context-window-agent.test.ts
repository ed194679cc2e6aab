// The context window through the whole app, against fake OpenAI-compatible servers that enforce a
// 2,048-token context as llama.cpp's server does: a long reply no longer breaks the session, an overflow the
// estimate missed is retried once with the newer half of the history, the usage a server reports corrects
// the estimate, and a message that cannot fit alone is refused with 422 before anything is stored.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, makeTempDir, type TestApp } from '../helpers/app.ts';
import { type ChatMessage, type FakeChatServer, startFakeChatServer } from '../helpers/fake-chat-server.ts';

const WORDS = 'the quick brown fox jumps over a lazy dog while seven wizards quietly box the jovial judge ';
/** English-like text of exactly `chars` characters. */
const prose = (chars: number, salt = '') =>
  `${salt}${WORDS.repeat(Math.ceil(chars / WORDS.length))}`.slice(0, chars);

/** llama.cpp-like: about three characters a token, so more tokens than Parley's estimate counts. */
let roomy: FakeChatServer;
/** Two characters a token and no usage reported: the estimate misses and nothing corrects it. */
let silent: FakeChatServer;
/** Two characters a token, with usage: the estimate is corrected by what the server reports. */
let reporting: FakeChatServer;
let t: TestApp;
let dir: string;

const agent = (id: string, server: FakeChatServer, extra: string[]) => [
  `  - id: ${id}`,
  '    instructions: You are a test agent.',
  '    provider: openai',
  `    base_url: ${server.baseUrl}`,
  '    model: small-model',
  '    context_window: 2048',
  ...extra,
  '    timeouts:',
  '      total_ms: 5000',
  '      stall_ms: 2000',
];

before(async () => {
  roomy = await startFakeChatServer({ contextTokens: 2048, reportUsage: true });
  const twoCharsAToken = (text: string) => Math.ceil(text.length / 2);
  silent = await startFakeChatServer({ contextTokens: 2048, countText: twoCharsAToken });
  reporting = await startFakeChatServer({
    contextTokens: 2048,
    countText: twoCharsAToken,
    reportUsage: true,
  });
  dir = await makeTempDir('parley-context-window-');
  const file = join(dir, 'agents.yaml');
  const yaml = [
    'agents:',
    ...agent('llama', roomy, []),
    ...agent('silent', silent, ['    max_tokens: 256']),
    ...agent('reporting', reporting, ['    max_tokens: 256']),
    '',
  ].join('\n');
  await writeFile(file, yaml);
  t = await buildTestApp({ PARLEY_AGENTS_FILE: file, OPENAI_API_KEY: 'sk-test' });
});

after(async () => {
  await t?.close();
  await Promise.all([roomy?.close(), silent?.close(), reporting?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: { 'x-api-key': t.apiKey }, ...(payload ? { payload } : {}) });

async function newSession(agentId: string): Promise<string> {
  const res = await call('POST', `/v1/agents/${agentId}/sessions`, {});
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

async function stored(sessionId: string): Promise<ChatMessage[]> {
  const res = await call('GET', `/v1/agents/sessions/${sessionId}/messages?limit=100`);
  assert.equal(res.statusCode, 200, res.body);
  return (res.json().items as { role: string; content: { text: string }[] }[]).map((m) => ({
    role: m.role,
    content: m.content.map((b) => b.text).join(''),
  }));
}

const send = (sessionId: string, content: string) =>
  call('POST', `/v1/agents/sessions/${sessionId}/messages`, { content });

/** The conversation part of a request (without its system message). */
const conversation = (server: FakeChatServer, index: number) =>
  server.requests[index]?.messages.filter((m) => m.role !== 'system') ?? [];

describe('a session whose history outgrows a 2,048-token model', () => {
  test('after one reply of 14,104 characters, the next sends get replies, the long reply left out', async () => {
    const sessionId = await newSession('llama');
    roomy.reply = () => prose(14_104);
    const first = await send(sessionId, 'Tell me a very long story.');
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(first.json().agent_message.content[0].text.length, 14_104);
    assert.equal(roomy.requests.at(-1)?.max_tokens, 1024, 'the reply reserve is sent as max_tokens');

    // What the session held before this change was sent whole, and the server refused it every time.
    const system = roomy.requests.at(-1)?.messages[0];
    assert.ok(system);
    const whole = [system, ...(await stored(sessionId)), { role: 'user', content: 'And then?' }];
    assert.ok(roomy.promptTokens(whole) > 2048, `the whole history is ${roomy.promptTokens(whole)} tokens`);

    roomy.reply = (request) => `Noted ${request.messages.length}.`;
    const requestsBefore = roomy.requests.length;
    for (const question of ['And then?', 'What happened next?', 'How did it end?']) {
      const res = await send(sessionId, question);
      assert.equal(res.statusCode, 201, res.body);
      const sent = conversation(roomy, roomy.requests.length - 1);
      assert.deepEqual(sent.at(-1), { role: 'user', content: question }, 'the newest message is sent');
      assert.ok(
        sent.every((m) => typeof m.content !== 'string' || m.content.length < 14_104),
        'the long reply is not sent again',
      );
    }
    assert.deepEqual(roomy.refused, [], 'no request was over the context');
    assert.equal(roomy.requests.length, requestsBefore + 3, 'one request a send');
    assert.equal((await stored(sessionId)).length, 8, 'every message and reply is stored');
  });
});

describe('an overflow the estimate missed', () => {
  test('is sent again once with the newer half of the history, and the send gets its reply', async () => {
    const sessionId = await newSession('silent');
    silent.reply = (request) => prose(600, `reply ${request.messages.length}: `);
    for (let turn = 0; turn < 8; turn++) {
      const res = await send(sessionId, prose(600, `question ${turn}: `));
      assert.equal(res.statusCode, 201, `turn ${turn}: ${res.body}`);
    }
    assert.ok(silent.refused.length >= 1, 'the server refused at least one prompt');
    for (const index of silent.refused) {
      const refused = conversation(silent, index);
      const retried = conversation(silent, index + 1);
      // The newer half, from its first user message: a chat template may refuse a reply first.
      const half = refused.slice(Math.floor(refused.length / 2));
      const fromUser = half.slice(half.findIndex((m) => m.role === 'user'));
      assert.deepEqual(retried, fromUser, `retry of request ${index}`);
      assert.ok(!silent.refused.includes(index + 1), 'the retry fits');
    }
    // No request, cut by the window or halved, started the model's history with a reply.
    for (let index = 0; index < silent.requests.length; index++) {
      assert.equal(conversation(silent, index)[0]?.role, 'user', `request ${index}`);
    }
    // Each overflow makes the estimate more careful: the last sends need no retry.
    const last = silent.requests.length - 1;
    assert.ok(!silent.refused.includes(last - 1) && !silent.refused.includes(last), String(silent.refused));
    assert.equal((await stored(sessionId)).length, 16);
  });
});

describe('the usage a server reports', () => {
  test('corrects the estimate, so that no prompt is refused and the history is cut to what fits', async () => {
    const sessionId = await newSession('reporting');
    reporting.reply = (request) => prose(600, `reply ${request.messages.length}: `);
    for (let turn = 0; turn < 8; turn++) {
      const res = await send(sessionId, prose(600, `question ${turn}: `));
      assert.equal(res.statusCode, 201, `turn ${turn}: ${res.body}`);
    }
    assert.deepEqual(reporting.refused, []);
    const last = reporting.requests.at(-1);
    assert.ok(last);
    assert.ok(reporting.promptTokens(last.messages) <= 2048);
    assert.ok(
      conversation(reporting, reporting.requests.length - 1).length < 15,
      'older messages were left out',
    );
  });
});

describe('a message that cannot fit the window alone', () => {
  test('is refused with 422 too_long_for_agent at body.content, and nothing is stored', async () => {
    const sessionId = await newSession('llama');
    const requestsBefore = roomy.requests.length;
    const res = await send(sessionId, prose(8_000));
    assert.equal(res.statusCode, 422, res.body);
    const [issue, ...more] = res.json().detail;
    assert.deepEqual(more, []);
    assert.deepEqual(issue.loc, ['body', 'content']);
    assert.equal(issue.type, 'too_long_for_agent');
    assert.match(issue.msg, /too long for this agent/);

    const streamed = await call('POST', `/v1/agents/sessions/${sessionId}/messages/stream`, {
      content: prose(8_000),
    });
    assert.equal(streamed.statusCode, 422, streamed.body);
    assert.equal(streamed.json().detail[0].type, 'too_long_for_agent');

    assert.deepEqual(await stored(sessionId), []);
    const session = await call('GET', `/v1/agents/sessions/${sessionId}`);
    assert.equal(session.json().messages_count, 0);
    assert.equal(roomy.requests.length, requestsBefore, 'the model was not called');

    roomy.reply = () => 'Short and fine.';
    const next = await send(sessionId, 'A short one.');
    assert.equal(next.statusCode, 201, next.body);
  });

  test('in a run, the 422 names the last message of the run, and no session is left behind', async () => {
    const before = await call('GET', '/v1/agents/sessions?agent_id=llama&limit=100');
    const res = await call('POST', '/v1/agents/llama/run', {
      messages: [{ content: 'First.' }, { content: prose(8_000) }],
    });
    assert.equal(res.statusCode, 422, res.body);
    assert.deepEqual(res.json().detail[0].loc, ['body', 'messages', 1, 'content']);
    assert.equal(res.json().detail[0].type, 'too_long_for_agent');
    const after = await call('GET', '/v1/agents/sessions?agent_id=llama&limit=100');
    assert.equal(after.json().items.length, before.json().items.length);
  });
});
