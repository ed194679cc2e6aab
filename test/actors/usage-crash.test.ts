// Usage across SIGKILLs and replays (docs/guides/usage.md#counting-exactly-once), on SQLite and PostgreSQL,
// with real processes: a priced agent's keyed turns are killed in the middle of their tool steps, finished by
// the same send after a restart, and replayed; after every round the session's and the user's totals and the
// usage report equal the sum over the stored replies, and the tool applied each call once.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, type TestContext, test } from 'node:test';
import { type Answer, call as request } from '../helpers/load.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { killLeftoverChildren, startService, tempDir } from '../helpers/process.ts';
import { recordDirective, startToolReceiver, toolAgent } from '../helpers/tool-receiver.ts';

after(killLeftoverChildren);

const apiKey = 'usage-crash-key-0123456789abcdef0123';
const pricing = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 };

const answered = (a: Answer | { error: string }): Answer => {
  assert.ok('status' in a, JSON.stringify(a));
  return a;
};

type Api = (
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<Answer>;

/** The totals the stored replies add up to, as the API answers totals. */
async function sumOfReplies(api: Api, sessionId: string) {
  const page = await api('GET', `/v1/agents/sessions/${sessionId}/messages?limit=100`);
  const replies = (page.body.items as { usage: Record<string, number> | null }[]).flatMap((m) =>
    m.usage ? [m.usage] : [],
  );
  const sum = (k: string) => replies.reduce((n, u) => n + (u[k] ?? 0), 0);
  return {
    turns: replies.length,
    input_tokens: sum('input_tokens'),
    output_tokens: sum('output_tokens'),
    cached_input_tokens: sum('cached_input_tokens'),
    reasoning_tokens: sum('reasoning_tokens'),
    cost_micro_usd: sum('cost_micro_usd'),
    cost_usd: sum('cost_micro_usd') / 1e6,
  };
}

for (const store of ['sqlite', 'postgres'] as const) {
  describe(`usage across SIGKILLs and replays (${store})`, { timeout: 240_000 }, () => {
    test('the totals always equal the sum over the stored replies: a killed turn finished by its retry counts once, a replay never', async (t: TestContext) => {
      const receiver = await startToolReceiver(t);
      const dataDir = await tempDir(t, 'parley-usage-crash-');
      const agentsFile = join(dataDir, 'agents.json');
      await writeFile(
        agentsFile,
        JSON.stringify({ agents: [{ ...toolAgent(receiver.url, 'priced'), pricing }] }),
      );
      const env: Record<string, string> = {
        PARLEY_BOOTSTRAP_API_KEY: apiKey,
        PARLEY_AGENTS_FILE: agentsFile,
        LOG_LEVEL: 'warn',
      };
      if (store === 'postgres') {
        const created = await createTestDatabase();
        if (!created.db) return t.skip(created.reason);
        const db = created.db;
        t.after(() => db.drop());
        env.DATABASE_URL = db.url;
        env.PARLEY_TOKEN_SECRET = 'usage-crash-secret-0123456789abcdef';
      }
      const start = async () => {
        const service = await startService({ dataDir, env, readyTimeoutMs: 60_000 });
        t.after(() => service.kill());
        const api: Api = async (method, path, body, headers = {}) =>
          answered(await request(service.url, apiKey, method, path, body, headers, 30_000));
        return { service, api };
      };

      let { service, api } = await start();
      const user = await api('POST', '/v1/agents/users', { reference: 'crash-user' });
      const session = await api('POST', '/v1/agents/priced/sessions', { user: { id: user.body.id } });
      const sessionId = String(session.body.id);
      const path = `/v1/agents/sessions/${sessionId}/messages`;

      const check = async (round: string) => {
        const expected = await sumOfReplies(api, sessionId);
        const read = await api('GET', `/v1/agents/sessions/${sessionId}`);
        assert.deepEqual(read.body.usage, expected, `${round}: the session's totals`);
        const reader = await api('GET', `/v1/agents/users/${user.body.id}`);
        assert.deepEqual(reader.body.usage, expected, `${round}: the user's totals`);
        const day = new Date().toISOString().slice(0, 10);
        const report = await api('GET', `/v1/agents/usage?group_by=session&from=${day}&to=${day}`);
        // A session nothing was counted for yet has no row.
        const rows = expected.turns === 0 ? [] : [{ key: sessionId, ...expected }];
        assert.deepEqual(report.body.items, rows, `${round}: the report`);
        return expected;
      };

      for (let round = 1; round <= 3; round++) {
        const key = `usage-crash-${round}`;
        const held = `held-${round}`;
        const content = `Round ${round} ${recordDirective(`first-${round}`)} [[tool@2:record {"value":"${held}"}]]`;
        // Killed while the second step's call runs: the first step is committed, no reply is.
        receiver.hold((r) => r.body !== null && JSON.stringify(r.body.input).includes(held));
        const arrived = receiver.nextRequest((r) => JSON.stringify(r.body?.input ?? null).includes(held));
        const sending = request(
          service.url,
          apiKey,
          'POST',
          path,
          { content },
          { 'idempotency-key': key },
          30_000,
        );
        await arrived;
        await service.stop('SIGKILL');
        assert.ok('error' in (await sending), 'the killed send was not answered');
        receiver.release();
        ({ service, api } = await start());
        const before = await check(`round ${round}, after the kill`);
        // The same send finishes the turn from its committed step: one more turn, counted once.
        const finished = await api('POST', path, { content }, { 'idempotency-key': key });
        assert.equal(finished.status, 201, JSON.stringify(finished.body));
        const after1 = await check(`round ${round}, finished`);
        assert.equal(after1.turns, before.turns + 1);
        // Replayed: nothing more.
        const replayed = await api('POST', path, { content }, { 'idempotency-key': key });
        assert.equal(replayed.headers['idempotent-replayed'], 'true');
        assert.deepEqual(await check(`round ${round}, replayed`), after1);
      }
      for (const k of receiver.keysOf(() => true)) assert.equal(receiver.applications.get(k), 1, k);
    });
  });
}
