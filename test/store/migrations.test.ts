// Migration parity: both stores' migrations, applied to an empty database each, must leave the same
// tables, columns (type family, nullability), primary keys and indexes, so that a migration added to one
// store and forgotten in the other, or a column or index written differently, fails naming it. The few
// differences the two schemas have on purpose are listed below, each with why.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { postgresMigrations } from '../../src/store/postgres/migrations.ts';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { SESSION_CHILD_TABLES } from '../../src/store/sql.ts';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { Migration } from '../../src/store/store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { postgresSchema, type Schema, schemaDifferences, sqliteSchema } from './schema.ts';

const rowOrder =
  "PostgreSQL's stand-in for SQLite's rowid, which every SQLite table has without declaring it: " +
  'the stores break ties in creation order by it (Dialect.rowOrder in src/store/sql.ts)';
const rowOrderInIndex =
  'every SQLite index ends in the rowid without naming it; the PostgreSQL index names row_order, ' +
  'its stand-in, to give the same order';

/** The differences the two schemas have on purpose, each with why. Anything else fails the test. */
const intended = new Map<string, string>([
  ['column files.row_order only in postgres (integer not null)', rowOrder],
  ['column sessions.row_order only in postgres (integer not null)', rowOrder],
  ['column users.row_order only in postgres (integer not null)', rowOrder],
  ['column webhook_deliveries.row_order only in postgres (integer not null)', rowOrder],
  ['column webhooks.row_order only in postgres (integer not null)', rowOrder],
  [
    'index users_tenant_email: columns sqlite (tenant_id, email nocase), postgres (tenant_id, <expression>)',
    "email is matched ignoring ASCII case: SQLite's NOCASE collation folds ASCII letters only, and so does " +
      "PostgreSQL's translate() expression the index is built on (no collation of PostgreSQL does just that)",
  ],
  [
    'index webhook_deliveries_key: columns sqlite (webhook_id, ordering_key), postgres (webhook_id, ordering_key, row_order)',
    rowOrderInIndex,
  ],
  [
    'index webhook_deliveries_webhook_created: columns sqlite (webhook_id, created_at), postgres (webhook_id, created_at, row_order)',
    rowOrderInIndex,
  ],
]);

const steps = (migrations: readonly Migration[]) => migrations.map((m) => `${m.version} ${m.name}`);

/** The schema SqliteStore leaves in a new file after applying `migrations`. */
async function migratedSqlite(dir: string, migrations: readonly Migration[] = sqliteMigrations) {
  const file = join(dir, `parley-${migrations.length}.db`);
  const store = new SqliteStore(file, migrations);
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
  return sqliteSchema(file);
}

it('both stores have the same migrations, by version and name, in the same order', () => {
  assert.deepEqual(steps(postgresMigrations), steps(sqliteMigrations));
});

it('every table whose rows name a session is one that deleting a session empties of it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'parley-children-'));
  try {
    const schema = await migratedSqlite(dir);
    const naming = [...schema.tables]
      .filter(([, table]) => table.columns.has('session_id'))
      .map(([name]) => name)
      .sort();
    assert.deepEqual(naming, [...SESSION_CHILD_TABLES].sort());
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

const created = await createTestDatabase();

if (created.db === null) {
  it('both stores migrate to the same schema', { skip: created.reason }, () => {});
} else {
  const db: TestDatabase = created.db;
  after(() => db.drop());

  describe('the schemas both stores migrate to', () => {
    let dir: string;
    let sqlite: Schema;
    let postgres: Schema;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'parley-parity-'));
      sqlite = await migratedSqlite(dir);
      const store = new PostgresStore(db.url);
      try {
        await store.migrate();
      } finally {
        await store.close();
      }
      postgres = await postgresSchema(db.url);
    });
    after(() => rm(dir, { recursive: true, force: true }));

    it('differ only in what is listed as intended, and each listed difference still exists', () => {
      const found = schemaDifferences(sqlite, postgres);
      const unexpected = found.filter((d) => !intended.has(d));
      const gone = [...intended.keys()].filter((d) => !found.includes(d));
      assert.deepEqual(
        unexpected,
        [],
        `The SQLite and PostgreSQL migrations leave different schemas:\n  ${unexpected.join('\n  ')}`,
      );
      assert.deepEqual(
        gone,
        [],
        `Listed as intended but no longer found (remove it):\n  ${gone.join('\n  ')}`,
      );
    });

    it('hold every table in both, with the same primary keys', () => {
      assert.deepEqual([...sqlite.tables.keys()].sort(), [...postgres.tables.keys()].sort());
      assert.ok(sqlite.tables.size >= 15, `only ${sqlite.tables.size} tables read`);
      for (const [name, table] of sqlite.tables) {
        assert.ok(table.primaryKey.length > 0, `table ${name} has no primary key`);
      }
    });

    it('name a migration applied to one store only, by its column and its index', async () => {
      const forgotten: Migration = {
        version: 1000,
        name: 'added to SQLite only',
        sql: `ALTER TABLE messages ADD COLUMN forgotten TEXT NOT NULL DEFAULT '';
              CREATE INDEX messages_forgotten ON messages(forgotten);`,
      };
      const ahead = await migratedSqlite(dir, [...sqliteMigrations, forgotten]);
      const found = schemaDifferences(ahead, postgres).filter((d) => !intended.has(d));
      assert.deepEqual(found, [
        'column messages.forgotten only in sqlite (text not null)',
        'index messages_forgotten only in sqlite',
      ]);
    });
  });
}
