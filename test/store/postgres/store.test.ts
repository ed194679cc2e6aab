// Runs the Store contract against PostgresStore on a fresh database, and checks that processes starting
// together on an empty database apply each migration once (under the advisory lock).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { postgresMigrations } from '../../../src/store/postgres/migrations.ts';
import { PostgresStore } from '../../../src/store/postgres/store.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import { storeContract } from '../contract/index.ts';

const created = await createTestDatabase();
const latestVersion = Math.max(...postgresMigrations.map((m) => m.version));

if (created.db === null) {
  it('PostgresStore meets the Store contract', { skip: created.reason }, () => {});
} else {
  const db: TestDatabase = created.db;
  after(() => db.drop());

  // One database for the whole file: the contract's tests use unique ids and may share it.
  storeContract('PostgresStore', async () => ({
    store: new PostgresStore(db.url),
    cleanup: async () => {},
  }));

  describe('PostgresStore on its database', () => {
    let empty: TestDatabase;
    before(async () => {
      const again = await createTestDatabase();
      assert.ok(again.db, 'a second test database');
      empty = again.db;
    });
    after(() => empty?.drop());

    it('several stores migrating one empty database at once all succeed and apply each migration once', async () => {
      const stores = Array.from({ length: 4 }, () => new PostgresStore(empty.url));
      try {
        assert.deepEqual(
          await Promise.all(stores.map((s) => s.migrate())),
          stores.map(() => latestVersion),
        );
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
      // Read with a plain connection, so that the assertion does not trust the code under test.
      const client = new pg.Client({ connectionString: empty.url });
      await client.connect();
      try {
        const { rows } = await client.query(
          'SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version',
        );
        assert.deepEqual(
          rows,
          postgresMigrations.map((m) => ({ version: m.version, n: 1 })),
        );
      } finally {
        await client.end();
      }
    });

    it('a key revoked by hand-written SQL on another connection moves the key epoch (a trigger moves it)', async () => {
      const store = new PostgresStore(db.url);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        await store.migrate();
        await store.createTenant('t_by_hand', 'Acme');
        await store.createApiKey({
          id: 'key_by_hand',
          tenant_id: 't_by_hand',
          hash: 'hash_by_hand',
          prefix: 'pk_',
          agents: ['*'],
        });
        const start = await store.apiKeyEpoch();
        await client.query(
          "UPDATE api_keys SET revoked_at = '2030-01-01T00:00:00.000Z' WHERE id = 'key_by_hand'",
        );
        assert.notEqual(await store.apiKeyEpoch(), start);
      } finally {
        await client.end();
        await store.close();
      }
    });
  });
}
