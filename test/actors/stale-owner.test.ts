// A process that still believes it owns a shard the store has given to another (as after a Redis restart,
// until its next renewal tells it; docs/internals/architecture.md#sharding-and-ownership) must not answer from
// its actor's memory: a refusal the machine decides (409 approval_pending) or an operation's answer that wrote
// nothing (a cancel) is given only once the store confirms the fence, else 503 shard_moving, as for a fenced
// write. Two apps over one store, on SQLite and PostgreSQL: each claims every shard at start (one node, no
// Redis), so the second fences the first out while the first's actors still hold the session as it was.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import {
  approvalAgents,
  approvalOf,
  call,
  pausedTurn,
  postgresMissing,
  turnsOf,
} from '../helpers/approvals.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { tempDir } from '../helpers/process.ts';
import { assertError, createSession } from '../helpers/sessions.ts';
import { startToolReceiver } from '../helpers/tool-receiver.ts';

const pgMissing = await postgresMissing();

/**
 * The old owner, started first, and a function that starts the new one on the same store (its start claims
 * every shard); both closed after the test.
 */
async function oldOwner(t: TestContext, kind: 'sqlite' | 'postgres') {
  const receiver = await startToolReceiver(t);
  const agentsFile = join(await tempDir(t, 'parley-stale-owner-'), 'agents.json');
  await writeFile(agentsFile, JSON.stringify({ agents: approvalAgents(receiver.url) }));
  const env = { PARLEY_AGENTS_FILE: agentsFile, PARLEY_TOKEN_SECRET: 'stale-owner-secret-0123456789abcdef' };
  let url = '';
  if (kind === 'postgres') {
    const created = await createTestDatabase();
    if (!created.db) throw new Error(created.reason);
    const { db } = created;
    t.after(() => db.drop());
    url = db.url;
  }
  const apps: TestApp[] = [];
  // The later app closes first: the first one's data directory holds the SQLite file.
  t.after(async () => {
    for (const app of apps.reverse()) await app.close();
  });
  const start = async (store?: () => SqliteStore | PostgresStore) => {
    const app = await buildTestApp(env, url ? () => new PostgresStore(url) : store);
    apps.push(app);
    return app;
  };
  const a = await start();
  return {
    a,
    receiver,
    takeOver: () => start(() => new SqliteStore(join(a.dataDir, 'parley.db'))),
  };
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`a fenced-out owner (${kind})`, { skip: kind === 'postgres' ? pgMissing : undefined }, () => {
    it('does not refuse a send with approval_pending for a turn the new owner has decided', async (t) => {
      const { a, takeOver } = await oldOwner(t, kind);
      const session = await createSession(a, 'shop');
      const atA = turnsOf(a, session.id);
      const paused = pausedTurn(await atA.send(call('refund', 'money') + call('email', 'spam')));
      // Its own refusal, while it owns the session: confirmed, and answered.
      assertError(await atA.send('anyone there?'), 409, 'approval_pending');

      const b = await takeOver();
      const atB = turnsOf(b, session.id, a.apiKey);
      const decided = await atB.decide(paused.id, [
        { call_id: approvalOf(paused, 'refund').call_id, approved: true },
        { call_id: approvalOf(paused, 'email').call_id, approved: false, reason: 'no' },
      ]);
      assert.equal(decided.statusCode, 201, decided.body);
      assert.equal(a.app.sessionHost.residentCount, 1, 'the old owner still holds the paused turn');

      // The old owner's actor still waits for those decisions: it answers as a fenced write does, and lets
      // the shard and its actors go.
      const stale = await atA.send('thanks');
      const error = assertError(stale, 503, 'shard_moving');
      assert.equal(stale.headers['retry-after'], '1');
      assert.deepEqual(error.context, { session_id: session.id });
      assert.equal(a.app.sessionHost.residentCount, 0);
      const metrics = (await a.app.inject({ url: '/metrics' })).body;
      assert.match(metrics, /^parley_stale_epoch_rejections_total 1$/m);
      // The client's retry at the owner is served.
      const retried = await atB.send('thanks');
      assert.equal(retried.statusCode, 201, retried.body);
      // Each turn's user message and reply, and nothing from the old owner.
      assert.equal((await atB.session()).json().messages_count, 4);
    });

    it('does not answer a cancel from memory for a turn the new owner paused', async (t) => {
      const { a, takeOver } = await oldOwner(t, kind);
      const session = await createSession(a, 'shop');
      const atA = turnsOf(a, session.id);
      assert.equal((await atA.send('hello')).statusCode, 201);

      const b = await takeOver();
      const atB = turnsOf(b, session.id, a.apiKey);
      const paused = pausedTurn(await atB.send(call('refund', 'money')));
      // The new owner's own refusal is answered.
      assertError(await atB.send('anyone there?'), 409, 'approval_pending');

      // The old owner's actor knows no paused turn: from memory it would answer the turn as stored (no reply
      // yet: "interrupted") and cancel nothing.
      assertError(await atA.cancel(paused.id), 503, 'shard_moving');
      const cancelled = await atB.cancel(paused.id);
      assert.equal(cancelled.statusCode, 200, cancelled.body);
      assert.deepEqual(cancelled.json().turn, { id: paused.id, status: 'cancelled', approvals: [] });
    });
  });
}
