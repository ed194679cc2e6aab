// Migration 15 (session event batches) on a database whose sessions already have event logs, on SQLite and
// PostgreSQL: each stored event becomes a batch of one, its data byte for byte, so that every log reads back
// as it did (same seqs, types, data and times, after any seq, by any limit), and the next commit numbers on
// from where the log was.
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
import type { SessionEventRecord, Store } from '../../src/store/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

const before15 = <M extends { version: number }>(migrations: readonly M[]) =>
  migrations.filter((m) => m.version < 15);

/** Runs SQL on the raw database: `?` placeholders on SQLite, `$n` on PostgreSQL. */
type Exec = (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;

/** Events as version 14 stored them, one row each: data as JSON.stringify wrote it. */
const oldEvents: [number, string, unknown, string][] = [
  [1, 'message.created', { message_id: 'msg_1' }, '2026-03-01T09:00:00.000Z'],
  [2, 'turn.started', { turn_id: 'turn_1' }, '2026-03-01T09:00:00.000Z'],
  [
    3,
    'message.completed',
    { text: 'café 🎉 "quoted" \\ back\nslash', n: [1.5, -2, 9007199254740991, null, true], nested: {} },
    '2026-03-01T09:00:01.250Z',
  ],
  [4, 'odd "type" \\ name', [], '2026-03-01T09:00:01.250Z'],
];
const otherEvents: [number, string, unknown, string][] = [
  [1, 'session.closed', { reason: 'done' }, '2026-03-02T00:00:00.000Z'],
];

/** Two sessions of tenant t_mig with event logs, written as version 14 wrote them. */
async function seed(old: Store, exec: Exec, p: (n: number) => string) {
  await old.createTenant('t_mig', 'T');
  const ids: [string, string] = [newId('ses'), newId('ses')];
  for (const [id, events] of [
    [ids[0], oldEvents],
    [ids[1], otherEvents],
  ] as const) {
    await exec(
      `INSERT INTO sessions (id, tenant_id, agent_id, shard, status, expires_at, snapshot, created_at,
         updated_at, events_count)
       VALUES (${p(1)}, 't_mig', 'a', ${p(2)}, 'active', '2030-01-01T00:00:00.000Z', '{}', ${p(3)}, ${p(4)},
         ${p(5)})`,
      [id, shardOf(id), '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', events.length],
    );
    for (const [seq, type, data, at] of events) {
      await exec(
        `INSERT INTO session_events (session_id, seq, type, data, created_at)
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)})`,
        [id, seq, type, JSON.stringify(data), at],
      );
    }
  }
  return ids;
}

const records = (events: typeof oldEvents): SessionEventRecord[] =>
  events.map(([seq, type, data, created_at]) => ({ seq, type, data, created_at }));

async function check(store: Store, exec: Exec, [id, otherId]: [string, string]) {
  // Each old event is a batch of one, its data the very text stored.
  const rows = await exec('SELECT session_id, last_seq, events FROM session_event_batches');
  const stored = new Map(rows.map((r) => [`${r.session_id} ${Number(r.last_seq)}`, r.events]));
  assert.equal(stored.size, oldEvents.length + otherEvents.length);
  for (const [sessionId, events] of [
    [id, oldEvents],
    [otherId, otherEvents],
  ] as const) {
    for (const [seq, type, data] of events) {
      const text = `[[${JSON.stringify(type)},${JSON.stringify(data)}]]`;
      assert.equal(stored.get(`${sessionId} ${seq}`), text);
    }
  }

  assert.deepEqual(await store.sessionEvents(id, 0, 10), records(oldEvents));
  assert.deepEqual(await store.sessionEvents(id, 1, 2), records(oldEvents.slice(1, 3)));
  assert.deepEqual(await store.sessionEvents(id, 4, 10), []);
  assert.deepEqual(await store.sessionEvents(otherId, 0, 10), records(otherEvents));

  // The next commit numbers on from the log's end, its events one batch.
  const shard = shardOf(id);
  const epoch = (await store.claimShards('mig', [shard])).get(shard) ?? 0;
  const at = '2026-03-03T00:00:00.000Z';
  const written = await store.commitSession({
    session_id: id,
    fence: { shard, epoch },
    at,
    patch: { snapshot: '{}' },
    events: [
      { type: 'x', data: { n: 5 } },
      { type: 'y', data: { n: 6 } },
    ],
  });
  assert.equal(written.events_count, 6);
  assert.deepEqual(await store.sessionEvents(id, 3, 10), [
    ...records(oldEvents.slice(3)),
    { seq: 5, type: 'x', data: { n: 5 }, created_at: at },
    { seq: 6, type: 'y', data: { n: 6 }, created_at: at },
  ]);
}

it('on SQLite, migration 15 keeps every event log as it read, each event a batch of one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'parley-mig15-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'parley.db');
  const old = new SqliteStore(file, before15(sqliteMigrations));
  await old.migrate();
  const raw = new DatabaseSync(file);
  const exec: Exec = async (sql, values = []) =>
    raw.prepare(sql).all(...(values as never[])) as Record<string, unknown>[];
  try {
    let ids: [string, string];
    try {
      ids = await seed(old, exec, () => '?');
    } finally {
      await old.close();
    }
    const store = new SqliteStore(file);
    try {
      await store.migrate();
      await check(store, exec, ids);
    } finally {
      await store.close();
    }
  } finally {
    raw.close();
  }
});

const created = await createTestDatabase();
it('on PostgreSQL, migration 15 keeps every event log as it read, each event a batch of one', {
  skip: created.db === null ? created.reason : false,
}, async () => {
  const db = created.db;
  assert.ok(db);
  after(() => db.drop());
  const old = new PostgresStore(db.url, before15(postgresMigrations));
  await old.migrate();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const exec: Exec = async (sql, values = []) => (await client.query(sql, values)).rows;
  try {
    let ids: [string, string];
    try {
      ids = await seed(old, exec, (n) => `$${n}`);
    } finally {
      await old.close();
    }
    const store = new PostgresStore(db.url);
    try {
      await store.migrate();
      await check(store, exec, ids);
    } finally {
      await store.close();
    }
  } finally {
    await client.end();
  }
});
