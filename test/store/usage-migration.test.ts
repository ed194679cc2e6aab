// Migration 13 (usage and budgets) on a database that already holds replies, on SQLite and PostgreSQL: their
// usage is counted per session and UTC day (tokens only: no cost was kept then), so that the totals agree
// with the stored messages from the first read after the upgrade.
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

const before13 = <M extends { version: number }>(migrations: readonly M[]) =>
  migrations.filter((m) => m.version < 13);

type Exec = (sql: string, values?: unknown[]) => Promise<unknown>;

/** A session of tenant t_mig (through the old store), then replies written as version 12 wrote them. */
async function seed(old: Store, exec: Exec, p: (n: number) => string): Promise<string> {
  await old.createTenant('t_mig', 'T');
  const id = newId('ses');
  const shard = shardOf(id);
  const epoch = (await old.claimShards('mig', [shard])).get(shard) ?? 0;
  // Written as version 12 wrote it: the store's code of today reads columns later versions add.
  await exec(
    `INSERT INTO sessions (id, tenant_id, agent_id, shard, status, expires_at, snapshot, created_at, updated_at)
     VALUES (${p(1)}, 't_mig', 'a', ${p(2)}, 'active', '2030-01-01T00:00:00.000Z', '{}', ${p(3)}, ${p(4)})`,
    [id, shard, '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
  );
  const replies: [number, string, string | null][] = [
    [1, '2026-03-01T23:59:59.999Z', JSON.stringify({ input_tokens: 100, output_tokens: 7 })],
    [2, '2026-03-02T00:00:00.000Z', JSON.stringify({ input_tokens: 50, output_tokens: 3 })],
    [3, '2026-03-02T08:00:00.000Z', JSON.stringify({ input_tokens: 20, output_tokens: 1 })],
    [4, '2026-03-02T09:00:00.000Z', null],
  ];
  for (const [seq, at, usage] of replies) {
    await exec(
      `INSERT INTO messages (id, session_id, seq, role, content, metadata, turn_id, created_at, epoch, usage)
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, 'assistant', '[]', NULL, 'turn_x', ${p(4)}, ${p(5)}, ${p(6)})`,
      [newId('msg'), id, seq, at, epoch, usage],
    );
  }
  return id;
}

async function check(store: Store, sessionId: string) {
  const totals = { cached_input_tokens: 0, reasoning_tokens: 0, cost_micro_usd: 0 };
  assert.deepEqual((await store.sessionUsage('t_mig', [sessionId])).get(sessionId), {
    turns: 3,
    input_tokens: 170,
    output_tokens: 11,
    ...totals,
  });
  const report = await store.usageReport('t_mig', {
    from: '2026-03-01',
    to: '2026-03-31',
    group_by: 'day',
    limit: 10,
    offset: 0,
  });
  assert.deepEqual(report.items, [
    { key: '2026-03-01', turns: 1, input_tokens: 100, output_tokens: 7, ...totals },
    { key: '2026-03-02', turns: 2, input_tokens: 70, output_tokens: 4, ...totals },
  ]);
}

it('on SQLite, migration 13 counts the replies already stored, per session and UTC day', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'parley-mig13-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'parley.db');
  const old = new SqliteStore(file, before13(sqliteMigrations));
  await old.migrate();
  const raw = new DatabaseSync(file);
  let sessionId: string;
  try {
    sessionId = await seed(
      old,
      async (sql, values = []) => raw.prepare(sql).run(...(values as never[])),
      () => '?',
    );
  } finally {
    raw.close();
    await old.close();
  }
  const store = new SqliteStore(file);
  try {
    await store.migrate();
    await check(store, sessionId);
  } finally {
    await store.close();
  }
});

const created = await createTestDatabase();
it('on PostgreSQL, migration 13 counts the replies already stored, per session and UTC day', {
  skip: created.db === null ? created.reason : false,
}, async () => {
  const db = created.db;
  assert.ok(db);
  after(() => db.drop());
  const old = new PostgresStore(db.url, before13(postgresMigrations));
  await old.migrate();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let sessionId: string;
  try {
    sessionId = await seed(
      old,
      (sql, values = []) => client.query(sql, values),
      (n) => `$${n}`,
    );
  } finally {
    await client.end();
    await old.close();
  }
  const store = new PostgresStore(db.url);
  try {
    await store.migrate();
    await check(store, sessionId);
  } finally {
    await store.close();
  }
});
