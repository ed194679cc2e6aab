// Shared set-up of the approval and cancel tests (docs/guides/approvals.md): an app on SQLite or PostgreSQL
// whose agents have a real HTTP tool that honours the Idempotency-Key (tool-receiver.ts) as three tools, one
// per approver (`refund`, operator; `email`, user; `lookup`, none), and request shortcuts for the turns routes.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { buildTestApp, makeTempDir, type TestApp } from './app.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { client } from './sessions.ts';
import { startToolReceiver, type ToolReceiver } from './tool-receiver.ts';

/** A tool of the receiver under `name`, waiting for `approval` when given. */
export const receiverTool = (url: string, name: string, approval?: 'user' | 'operator' | 'none') => ({
  name,
  description: `The ${name} tool.`,
  input_schema: { type: 'object', properties: { value: { type: 'string' } } },
  url,
  // Long: a call the receiver holds must not time out.
  timeout_ms: 30_000,
  ...(approval ? { approval } : {}),
});

/**
 * The agents of the tests: `shop`, the same exposing its tools, one whose approvals expire at once, a slow one,
 * one whose sessions expire a second after their last message, and `desk`, which people may take over.
 */
export const approvalAgents = (url: string) => {
  const tools = [
    receiverTool(url, 'refund', 'operator'),
    receiverTool(url, 'email', 'user'),
    receiverTool(url, 'lookup'),
  ];
  return [
    { id: 'shop', tools },
    { id: 'shop-open', tools, expose_tools: true },
    { id: 'shop-quick', tools, approval_timeout_seconds: 1 },
    { id: 'shop-slow', tools, scripted: { token_delay_ms: 25 } },
    { id: 'shop-brief', tools, session_ttl: 1 },
    // People may take over (docs/guides/humans.md): its model has handoff_to_human, its users may ask.
    { id: 'desk', tools, handoff: { enabled: true, user_can_request: true } },
  ];
};

/** `[[tool:NAME {"value":…}]]`: the scripted model calls NAME with `value` in the turn's first step (or `step`). */
export const call = (name: string, value: string, step = 1) =>
  `[[tool${step === 1 ? '' : `@${step}`}:${name} ${JSON.stringify({ value })}]]`;

export type StoreKind = 'sqlite' | 'postgres';

export interface ApprovalApp extends TestApp {
  receiver: ToolReceiver;
}

/**
 * An app on a fresh store of `kind` with the approval agents, a tenant `t1` and its key; `{ skip }` saying why
 * when PostgreSQL is not there (a failure under CI=true, where every service must be).
 */
export async function buildApprovalApp(
  t: Pick<TestContext, 'after'>,
  kind: StoreKind,
): Promise<ApprovalApp | { skip: string }> {
  const receiver = await startToolReceiver(t);
  const dir = await makeTempDir('parley-approvals-');
  const agentsFile = join(dir, 'agents.json');
  await writeFile(agentsFile, JSON.stringify({ agents: approvalAgents(receiver.url) }));
  let pg: TestDatabase | undefined;
  if (kind === 'postgres') {
    const created = await createTestDatabase();
    if (created.db === null) return { skip: created.reason };
    pg = created.db;
  }
  const built = await buildTestApp(
    {
      PARLEY_AGENTS_FILE: agentsFile,
      PARLEY_TOKEN_SECRET: 'approvals-test-secret-0123456789abcdef',
      // Webhooks to a receiver on loopback, and a sweep every second (it applies expired approvals).
      PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
      PARLEY_SWEEP_SECONDS: '1',
    },
    pg ? () => new PostgresStore(pg.url) : undefined,
  );
  return {
    ...built,
    receiver,
    async close() {
      await built.close();
      await pg?.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Requests about one session's turns, with the API key `key` (default: the app's). */
export function turnsOf(t: TestApp, sessionId: string, key?: string) {
  const c = client(t, key);
  const base = `/v1/agents/sessions/${sessionId}`;
  return {
    send: (content: string, headers?: Record<string, string>) =>
      c.post(`${base}/messages`, { content }, headers),
    decide: (turnId: string, decisions: unknown[], headers?: Record<string, string>) =>
      c.post(`${base}/turns/${turnId}/approvals`, { decisions }, headers),
    cancel: (turnId: string) => c.post(`${base}/turns/${turnId}/cancel`),
    events: (turnId: string, after?: string) =>
      c.get(`${base}/turns/${turnId}/events`, after ? { 'last-event-id': after } : {}),
    session: () => c.get(base),
  };
}

/** The paused turn of a 202 answer: its id and the approvals shown. */
export function pausedTurn(res: LightMyRequestResponse) {
  assert.equal(res.statusCode, 202, res.body);
  const body = res.json();
  assert.equal(body.agent_message, null);
  assert.equal(body.turn.status, 'awaiting_approval');
  return body.turn as {
    id: string;
    approvals: {
      call_id: string;
      tool: string;
      input: unknown;
      approver: string;
      requested_at: string;
      expires_at: string;
    }[];
  };
}

/** The approval of `tool` in a paused turn. */
export function approvalOf(turn: ReturnType<typeof pausedTurn>, tool: string) {
  const approval = turn.approvals.find((a) => a.tool === tool);
  assert.ok(approval, `no approval for ${tool} in ${JSON.stringify(turn)}`);
  return approval;
}

/** The receiver's requests of session `sessionId` (for `tool`, when given). */
export const callsOf = (receiver: ToolReceiver, sessionId: string, tool?: string) =>
  receiver.requests.filter(
    (r) => r.body?.session_id === sessionId && (tool === undefined || r.body.tool === tool),
  );

/** Why the PostgreSQL suites skip here, or undefined when a server answers (tried once per file). */
export async function postgresMissing(): Promise<string | undefined> {
  const created = await createTestDatabase();
  if (created.db === null) return created.reason;
  await created.db.drop();
  return undefined;
}

/**
 * Runs `suite` once per store, each with its own app (built before its tests, closed after); the PostgreSQL
 * one skips with `pgMissing` when that says why (see postgresMissing).
 */
export function perStore(
  title: string,
  pgMissing: string | undefined,
  suite: (t: ApprovalApp, kind: StoreKind) => void,
): void {
  for (const kind of ['sqlite', 'postgres'] as const) {
    const skip = kind === 'postgres' ? pgMissing : undefined;
    describe(`${title} (${kind})`, { skip }, () => {
      let built: ApprovalApp | undefined;
      const handle = new Proxy({} as ApprovalApp, {
        get: (_, prop) => {
          if (!built) throw new Error('the app is built in a before() hook: use it in tests');
          return built[prop as keyof ApprovalApp];
        },
      });
      const cleanups: (() => unknown)[] = [];
      before(async () => {
        if (skip !== undefined) return;
        const made = await buildApprovalApp({ after: (fn) => void cleanups.push(fn as () => unknown) }, kind);
        if ('skip' in made) throw new Error(made.skip);
        built = made;
      });
      after(async () => {
        await built?.close();
        for (const fn of cleanups) await fn();
      });
      suite(handle, kind);
    });
  }
}
