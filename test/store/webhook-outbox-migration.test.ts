// Migration 11 (webhook outbox bounds) on a database that has webhook deliveries, on SQLite and PostgreSQL:
// each pending delivery's payload becomes its event's, stored once; delivered and failed ones keep no
// payload; each delivery counts its payload's bytes, and the tenant's counters are summed from them. Then,
// as every queueing after it: an event to three endpoints stores its payload once.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, it } from 'node:test';
import pg from 'pg';
import { newId } from '../../src/ids.ts';
import { shardOf } from '../../src/shards.ts';
import { postgresMigrations } from '../../src/store/postgres/migrations.ts';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { Store } from '../../src/store/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

// migrate() answers the latest version: 11 and whatever came after it.
const latest = (migrations: readonly { version: number }[]) => Math.max(...migrations.map((m) => m.version));
const before11 = <M extends { version: number }>(migrations: readonly M[]) =>
  migrations.filter((m) => m.version < 11);

/** Runs SQL on the raw database: `?` placeholders on SQLite, `$n` on PostgreSQL. */
type Exec = (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;

const payload = (n: number) => JSON.stringify({ type: 'turn.completed', data: { n, note: 'café' } });
const at = '2030-01-01T00:00:00.000Z';

/** Old-shape rows: one event pending to two endpoints, one delivered to both, of tenant t_mig. */
async function seed(exec: Exec, p: (n: number) => string) {
  await exec(`INSERT INTO tenants (id, name, created_at) VALUES (${p(1)}, 'T', ${p(2)})`, ['t_mig', at]);
  for (const id of ['wh_a', 'wh_b']) {
    await exec(
      `INSERT INTO webhooks (id, tenant_id, url, events, secret, created_at)
       VALUES (${p(1)}, 't_mig', 'https://x.example.com/', '["turn.completed"]', 'whsec_x', ${p(2)})`,
      [id, at],
    );
  }
  const rows = [
    ['whd_1', 'wh_a', 'evt_pending', 'pending', payload(1)],
    ['whd_2', 'wh_b', 'evt_pending', 'pending', payload(1)],
    ['whd_3', 'wh_a', 'evt_done', 'delivered', payload(2)],
    ['whd_4', 'wh_b', 'evt_done', 'failed', payload(2)],
  ];
  for (const [id, webhook, evt, status, body] of rows) {
    await exec(
      `INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, type, ordering_key, shard, payload,
         status, attempts, next_attempt_at, created_at)
       VALUES (${p(1)}, 't_mig', ${p(2)}, ${p(3)}, 'turn.completed', ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, 0,
         ${p(8)}, ${p(9)})`,
      [
        id,
        webhook,
        evt,
        `ses_${evt}`,
        shardOf(`ses_${evt}`),
        body,
        status,
        status === 'pending' ? at : null,
        at,
      ],
    );
  }
}

async function checkMigrated(exec: Exec, store: Store) {
  assert.deepEqual(await exec('SELECT id, payload FROM webhook_events ORDER BY id'), [
    { id: 'evt_pending', payload: payload(1) },
  ]);
  const bytes = Buffer.byteLength(payload(1));
  const deliveries = await exec('SELECT id, bytes FROM webhook_deliveries ORDER BY id');
  assert.deepEqual(
    deliveries.map((d) => [d.id, Number(d.bytes)]),
    [
      ['whd_1', bytes],
      ['whd_2', bytes],
      ['whd_3', 0],
      ['whd_4', 0],
    ],
  );
  assert.deepEqual(await store.webhookOutboxUsage('t_mig'), {
    pending_deliveries: 2,
    pending_bytes: 2 * bytes,
  });
  const due = await store.dueWebhookDeliveries(at, 100);
  assert.deepEqual(await Promise.all(due.map(async (d) => [d.id, await store.webhookPayload(d.event_id)])), [
    ['whd_1', payload(1)],
    ['whd_2', payload(1)],
  ]);
  // From now on an event to three endpoints stores its payload once.
  await store.createWebhook(
    't_mig',
    { id: 'wh_c', url: 'https://y.example.com/', events: ['session.closed'], secret: 'whsec_y' },
    20,
  );
  await exec(`UPDATE webhooks SET events = '["turn.completed","session.closed"]'`);
  const sessionId = newId('ses');
  const shard = shardOf(sessionId);
  const epoch = (await store.claimShards('mig', [shard])).get(shard) ?? 0;
  const fence = { shard, epoch };
  await store.createSession(
    't_mig',
    {
      id: sessionId,
      agent_id: 'a',
      user_id: null,
      shard,
      context: {},
      metadata: {},
      expires_at: at,
      snapshot: '{}',
    },
    fence,
  );
  const event = {
    id: 'evt_new',
    tenant_id: 't_mig',
    type: 'session.closed' as const,
    ordering_key: sessionId,
    shard,
    payload: payload(3),
    created_at: at,
  };
  const result = await store.commitSession({
    session_id: sessionId,
    fence,
    patch: { snapshot: '{}' },
    webhookEvents: [event],
  });
  assert.equal(result.webhook_deliveries, 3);
  assert.deepEqual(
    await exec(`SELECT count(*) AS n FROM webhook_events WHERE id = 'evt_new'`).then((r) => Number(r[0]?.n)),
    1,
  );
}

it('on SQLite, migration 11 carries pending payloads over as events and counts them in the outbox', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'parley-mig11-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'parley.db');
  const old = new SqliteStore(file, before11(sqliteMigrations));
  await old.migrate();
  await old.close();
  const raw = new DatabaseSync(file);
  const exec: Exec = async (sql, values = []) =>
    // Plain objects: node:sqlite's rows have no prototype.
    raw
      .prepare(sql)
      .all(...(values as never[]))
      .map((row) => ({ ...row }));
  try {
    await seed(exec, () => '?');
    const store = new SqliteStore(file);
    try {
      assert.equal(await store.migrate(), latest(sqliteMigrations));
      await checkMigrated(exec, store);
    } finally {
      await store.close();
    }
  } finally {
    raw.close();
  }
});

const created = await createTestDatabase();
it('on PostgreSQL, migration 11 carries pending payloads over as events and counts them in the outbox', {
  skip: created.db === null ? created.reason : false,
}, async () => {
  const db = created.db;
  assert.ok(db);
  after(() => db.drop());
  const old = new PostgresStore(db.url, before11(postgresMigrations));
  await old.migrate();
  await old.close();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const exec: Exec = async (sql, values = []) => (await client.query(sql, values)).rows;
  try {
    await seed(exec, (n) => `$${n}`);
    const store = new PostgresStore(db.url);
    try {
      assert.equal(await store.migrate(), latest(postgresMigrations));
      await checkMigrated(exec, store);
    } finally {
      await store.close();
    }
  } finally {
    await client.end();
  }
});
