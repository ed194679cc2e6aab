// Shared setup for the session, message and run tests: an app with a small catalogue of agents tuned for
// testing (short lifetime, small message limit, fast stall timeout, token delay) and request shortcuts.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, makeTempDir, type TestApp, type UseAppOptions, useApp } from './app.ts';
import { encodeForm, fileForm } from './multipart.ts';

/** The agents every session test app knows, besides `demo` (the built-in one, kept under its name). */
export const testAgents = [
  { id: 'demo', name: 'Demo', instructions: 'You are a friendly demo agent. Answer briefly.' },
  { id: 'other', instructions: 'Another agent, for scoped keys.' },
  /** Sessions expire one second after their last activity. */
  { id: 'short', session_ttl: 1 },
  /** Two turns (user + assistant each) fill a session. */
  { id: 'limited', limits: { messages_per_session: 4 } },
  /** `[[stall]]` times out after 200 ms instead of 20 s. */
  { id: 'stally', timeouts: { total_ms: 5000, stall_ms: 200 } },
  /** Every token takes 2 ms, so that concurrent turns overlap. */
  { id: 'slow', scripted: { token_delay_ms: 2 } },
  /** Own inactivity messages; the final one does not close the conversation. */
  {
    id: 'lingering',
    inactivity: { warning_message: 'Still there?', final_message: 'Goodbye for now.', close_on_final: false },
  },
];

/** Writes a catalogue (JSON is YAML) to a temporary directory; returns its path and a cleanup. */
export async function writeAgentsFile(agents: object[]): Promise<{ file: string; remove(): Promise<void> }> {
  const dir = await makeTempDir('parley-agents-');
  const file = join(dir, 'agents.yaml');
  await writeFile(file, JSON.stringify({ agents }));
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A test app whose catalogue is `agents` (default: testAgents). */
export async function buildSessionApp(
  env: Record<string, string> = {},
  agents: object[] = testAgents,
): Promise<TestApp> {
  const catalogue = await writeAgentsFile(agents);
  const t = await buildTestApp({ PARLEY_AGENTS_FILE: catalogue.file, ...env });
  return {
    ...t,
    async close() {
      await t.close();
      await catalogue.remove();
    },
  };
}

/** useApp of buildSessionApp: the test catalogue (testAgents) unless `agents` is given. */
export const useSessionApp = ({
  env = {},
  agents = testAgents,
  setUp,
}: UseAppOptions & { agents?: object[] } = {}) => useApp(() => buildSessionApp(env, agents), setUp);

export interface Message {
  id: string;
  role: 'user' | 'assistant';
  content: ({ type: 'text'; text: string } | { type: 'image' | 'file'; file_id: string })[];
  created_at: string;
  metadata: Record<string, unknown> | null;
  tool_calls?:
    | {
        id: string;
        name: string;
        input: unknown;
        output: unknown;
        status: 'ok' | 'error';
        duration_ms: number;
      }[]
    | null;
  /** The operator who wrote it (docs/guides/humans.md); null on every other message. */
  author?: { id: string; name: string } | null;
}

export interface Session {
  id: string;
  agent_id: string;
  status: 'active' | 'closed' | 'expired';
  created_at: string;
  updated_at: string;
  user: { id: string; reference: string | null } | null;
  messages_count: number;
  last_message_at: string | null;
  closed_at: string | null;
  context: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** The session's usage totals (docs/guides/usage.md). */
  usage?: Record<string, number>;
  /** The end user's feedback, null without (shown when created, read or listed). */
  feedback?: { id: string; score: number; comment: string | null; submitted_at: string } | null;
}

/** Request shortcuts authenticated with `key` (default: the tenant t1 key for every agent, read when sending). */
export function client(t: TestApp, key?: string) {
  const auth = (headers: Record<string, string> = {}) => ({ 'x-api-key': key ?? t.apiKey, ...headers });
  return {
    get: (url: string, headers?: Record<string, string>) =>
      t.app.inject({ method: 'GET', url, headers: auth(headers) }),
    post: (url: string, payload?: unknown, headers?: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: auth(headers),
        ...(payload === undefined ? {} : { payload: payload as object }),
      }),
    put: (url: string, payload: unknown) =>
      t.app.inject({ method: 'PUT', url, headers: auth(), payload: payload as object }),
    delete: (url: string) => t.app.inject({ method: 'DELETE', url, headers: auth() }),
  };
}

export async function createSession(
  t: TestApp,
  agentId = 'demo',
  body: Record<string, unknown> = {},
  key: string = t.apiKey,
): Promise<Session> {
  const res = await client(t, key).post(`/v1/agents/${agentId}/sessions`, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

export async function createUser(t: TestApp, body: Record<string, unknown> = {}, key = t.apiKey) {
  const res = await client(t, key).post('/v1/agents/users', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { id: string; reference: string | null; name: string | null };
}

export function send(
  t: TestApp,
  sessionId: string,
  body: unknown,
  headers?: Record<string, string>,
  key: string = t.apiKey,
): Promise<LightMyRequestResponse> {
  return client(t, key).post(`/v1/agents/sessions/${sessionId}/messages`, body, headers);
}

/** Sends `text` and returns the agent's reply, asserting a 201. */
export async function turn(t: TestApp, sessionId: string, text: string): Promise<Message> {
  const res = await send(t, sessionId, { content: text });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().agent_message;
}

export async function getSession(t: TestApp, sessionId: string): Promise<Session> {
  const res = await client(t).get(`/v1/agents/sessions/${sessionId}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Every message of a session, oldest first. */
export async function allMessages(t: TestApp, sessionId: string): Promise<Message[]> {
  const messages: Message[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const res = await client(t).get(`/v1/agents/sessions/${sessionId}/messages?limit=100&offset=${offset}`);
    assert.equal(res.statusCode, 200, res.body);
    messages.push(...res.json().items);
    offset = res.json().next_offset;
  }
  return messages;
}

/**
 * Sends `text` under `headers`' Idempotency-Key twice, as a client retrying after a refusal would: the first
 * is served (201), the second replays it, and the session then holds that one exchange and nothing else.
 */
export async function assertServedOnce(
  t: TestApp,
  sessionId: string,
  text: string,
  headers: Record<string, string>,
): Promise<void> {
  const served = await send(t, sessionId, { content: text }, headers);
  assert.equal(served.statusCode, 201, served.body);
  const again = await send(t, sessionId, { content: text }, headers);
  assert.equal(again.json().agent_message.id, served.json().agent_message.id);
  assert.deepEqual(
    (await allMessages(t, sessionId)).map((m) => m.role),
    ['user', 'assistant'],
  );
}

export const textOf = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');

/** Uploads a file to the tenant pool and returns its id. */
export async function upload(t: TestApp, content: Buffer, name: string, type: string): Promise<string> {
  const form = await encodeForm(fileForm(content, name, type));
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/files',
    headers: { 'x-api-key': t.apiKey, 'content-type': form.contentType },
    payload: form.payload,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

/** Asserts the error envelope's status and code; returns the error object. */
export function assertError(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json();
  assert.equal(body.error.code, code, res.body);
  return body.error as { code: string; name: string; message: string; context?: Record<string, unknown> };
}

/** Asserts a 422 whose first detail is at `loc`. */
export function assert422(res: LightMyRequestResponse, loc: (string | number)[], type?: string) {
  assert.equal(res.statusCode, 422, res.body);
  const detail = res.json().detail as { loc: (string | number)[]; type: string }[];
  const hit = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  assert.ok(hit, `no detail at ${JSON.stringify(loc)} in ${res.body}`);
  if (type !== undefined) assert.equal(hit.type, type, res.body);
}

/** Asserts a 422 whose first detail lies under `prefix` (e.g. somewhere in ["body","content"]). */
export function assert422Under(res: LightMyRequestResponse, prefix: (string | number)[]) {
  assert.equal(res.statusCode, 422, res.body);
  const [first] = res.json().detail as { loc: (string | number)[] }[];
  assert.deepEqual(first?.loc.slice(0, prefix.length), prefix, res.body);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
