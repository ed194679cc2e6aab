// Approvals across a SIGKILL of the one process (docs/internals/decisions.md#approvals), on SQLite and
// PostgreSQL, with a real tool server that honours the Idempotency-Key: killed (a) after the decision was
// committed and before the approved call reached the tool, (b) while the approved call runs, (c) while the turn
// waits for its decisions. After a restart the turn goes on (by itself, through the sweep, or when decided):
// the tool sees the approved call's key at most twice and applies it once, and never sees the denied call.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, type TestContext, test } from 'node:test';
import { approvalAgents } from '../helpers/approvals.ts';
import { type Answer, call as request } from '../helpers/load.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { killLeftoverChildren, startService, tempDir } from '../helpers/process.ts';
import { startToolReceiver, type ToolReceiver } from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

after(killLeftoverChildren);

const apiKey = 'approvals-crash-key-0123456789abcdef';

interface Fixture {
  receiver: ToolReceiver;
  dataDir: string;
  env: Record<string, string>;
}

/** A data directory (and a PostgreSQL database when asked), the approval agents, a tool server. */
async function fixture(t: TestContext, store: 'sqlite' | 'postgres'): Promise<Fixture | null> {
  const receiver = await startToolReceiver(t);
  const dataDir = await tempDir(t, 'parley-approvals-crash-');
  const agentsFile = join(dataDir, 'agents.json');
  await writeFile(agentsFile, JSON.stringify({ agents: approvalAgents(receiver.url) }));
  const env: Record<string, string> = {
    PARLEY_BOOTSTRAP_API_KEY: apiKey,
    PARLEY_AGENTS_FILE: agentsFile,
    // The sweep moves on a decided turn whose process died: every second here.
    PARLEY_SWEEP_SECONDS: '1',
    LOG_LEVEL: 'warn',
  };
  if (store === 'postgres') {
    const created = await createTestDatabase();
    if (!created.db) {
      t.skip(created.reason);
      return null;
    }
    const db = created.db;
    t.after(() => db.drop());
    env.DATABASE_URL = db.url;
    env.PARLEY_TOKEN_SECRET = 'approvals-crash-secret-0123456789abcdef';
  }
  return { receiver, dataDir, env };
}

async function start(t: TestContext, f: Fixture) {
  const service = await startService({ dataDir: f.dataDir, env: f.env, readyTimeoutMs: 60_000 });
  t.after(() => service.kill());
  const api = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    request(service.url, apiKey, method, path, body, {}, 30_000);
  return { service, api };
}

const answered = (a: Answer | { error: string }): Answer => {
  assert.ok('status' in a, JSON.stringify(a));
  return a;
};

/** A session of `shop` whose turn waits for `refund` (to approve) and `email` (to deny). */
async function pausedTurn(api: Awaited<ReturnType<typeof start>>['api']) {
  const created = answered(await api('POST', '/v1/agents/shop/sessions', {}));
  const sessionId = String(created.body.id);
  const content = '[[tool:refund {"value":"money"}]] [[tool:email {"value":"spam"}]]';
  const sent = answered(await api('POST', `/v1/agents/sessions/${sessionId}/messages`, { content }));
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  const approvals = sent.body.turn.approvals as { call_id: string; tool: string }[];
  const idOf = (tool: string) => approvals.find((a) => a.tool === tool)?.call_id ?? '';
  return {
    sessionId,
    turnId: String(sent.body.turn.id),
    refund: idOf('refund'),
    email: idOf('email'),
  };
}

const decisions = (turn: { refund: string; email: string }) => ({
  decisions: [
    { call_id: turn.refund, approved: true },
    { call_id: turn.email, approved: false, reason: 'no spam' },
  ],
});

/** The session's stored messages, through the service. */
async function messages(api: Awaited<ReturnType<typeof start>>['api'], sessionId: string) {
  const page = answered(await api('GET', `/v1/agents/sessions/${sessionId}/messages?limit=100`));
  return page.body.items as {
    role: string;
    stop_reason: string | null;
    tool_calls: { name: string; output: unknown }[] | null;
  }[];
}

/** What must hold once the turn finished: one reply, the refund applied once, the email never seen. */
async function checkFinished(
  f: Fixture,
  api: Awaited<ReturnType<typeof start>>['api'],
  turn: Awaited<ReturnType<typeof pausedTurn>>,
) {
  let stored: Awaited<ReturnType<typeof messages>> = [];
  await waitFor(
    'the turn replied',
    async () => {
      stored = await messages(api, turn.sessionId);
      return stored.some((m) => m.role === 'assistant');
    },
    60_000,
  );
  assert.deepEqual(
    stored.map((m) => m.role),
    ['user', 'assistant'],
  );
  const outputs = Object.fromEntries((stored[1]?.tool_calls ?? []).map((c) => [c.name, c.output]));
  assert.deepEqual(outputs.refund, { recorded: 'money' });
  assert.deepEqual(outputs.email, { error: 'denied', by: 'operator', reason: 'no spam' });
  const key = `${turn.turnId}:${turn.refund}`;
  const seen = f.receiver.requests.filter((r) => r.key === key).length;
  assert.ok(seen >= 1 && seen <= 2, `the approved call was seen ${seen} times`);
  assert.equal(f.receiver.applications.get(key), 1);
  assert.deepEqual(
    f.receiver.requests.filter((r) => r.body?.tool === 'email'),
    [],
    'the denied call never reached the tool',
  );
  return seen;
}

for (const store of ['sqlite', 'postgres'] as const) {
  describe(`approvals across a SIGKILL (${store})`, { timeout: 240_000 }, () => {
    test('(c) killed while the turn waits: after the restart the decision lets it go on', async (t) => {
      const f = await fixture(t, store);
      if (!f) return;
      const first = await start(t, f);
      const turn = await pausedTurn(first.api);
      await first.service.stop('SIGKILL');
      const second = await start(t, f);
      const session = answered(await second.api('GET', `/v1/agents/sessions/${turn.sessionId}`));
      assert.equal(session.body.pending_approvals.length, 2, 'the waiting calls survived');
      const refused = answered(
        await second.api('POST', `/v1/agents/sessions/${turn.sessionId}/messages`, { content: 'hi' }),
      );
      assert.equal(refused.body.error?.code, 'approval_pending');
      const decided = answered(
        await second.api(
          'POST',
          `/v1/agents/sessions/${turn.sessionId}/turns/${turn.turnId}/approvals`,
          decisions(turn),
        ),
      );
      assert.equal(decided.status, 201, JSON.stringify(decided.body));
      assert.equal(await checkFinished(f, second.api, turn), 1);
    });

    test('(a) killed after the decision was committed, before the approved call reached the tool: it goes on by itself', async (t) => {
      const f = await fixture(t, store);
      if (!f) return;
      const first = await start(t, f);
      const turn = await pausedTurn(first.api);
      f.receiver.gate((body) => body?.tool === 'refund');
      const atGate = f.receiver.nextGated();
      const deciding = first.api(
        'POST',
        `/v1/agents/sessions/${turn.sessionId}/turns/${turn.turnId}/approvals`,
        decisions(turn),
      );
      await atGate;
      await first.service.stop('SIGKILL');
      assert.ok('error' in (await deciding), 'the decision was not answered');
      // The call never reached the tool: its caller died at the gate.
      await f.receiver.dropped(1);
      f.receiver.openGate();
      const second = await start(t, f);
      // Nobody touches the session: the sweep finds the decided turn and moves it on.
      assert.equal(await checkFinished(f, second.api, turn), 1);
      // The decision again: the turn as it is now.
      const again = answered(
        await second.api(
          'POST',
          `/v1/agents/sessions/${turn.sessionId}/turns/${turn.turnId}/approvals`,
          decisions(turn),
        ),
      );
      assert.equal(again.status, 201, JSON.stringify(again.body));
      assert.equal(again.headers['idempotent-replayed'], 'true');
    });

    test('(b) killed while the approved call runs: made again under its key after the restart, applied once', async (t) => {
      const f = await fixture(t, store);
      if (!f) return;
      const first = await start(t, f);
      const turn = await pausedTurn(first.api);
      const isRefund = (r: { body: { tool: string } | null }) => r.body?.tool === 'refund';
      f.receiver.hold(isRefund);
      const running = f.receiver.nextRequest(isRefund);
      const deciding = first.api(
        'POST',
        `/v1/agents/sessions/${turn.sessionId}/turns/${turn.turnId}/approvals`,
        decisions(turn),
      );
      await running;
      await first.service.stop('SIGKILL');
      f.receiver.release();
      assert.ok('error' in (await deciding), 'the decision was not answered');
      const second = await start(t, f);
      assert.equal(await checkFinished(f, second.api, turn), 2, 'made again under the same key');
    });
  });
}
