// Two processes starting together on one empty database both come up: the bootstrap key and its tenant
// are created once, whichever process gets there first, and the other reads what it made.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { ensureBootstrapKey, generateApiKey } from '../../src/auth/api-keys.ts';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { Store } from '../../src/store/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

/** Starts two stores on one empty database the way two nodes would, racing on the bootstrap key. */
async function raceBootstrap(open: () => Store) {
  const stores = [open(), open()];
  try {
    await Promise.all(stores.map((s) => s.migrate()));
    const key = generateApiKey();
    const [a, b] = await Promise.all(stores.map((s) => ensureBootstrapKey(s, key)));
    const [t1, t2] = await Promise.all(stores.map((s) => s.createTenant('acme', 'Acme')));
    return { a, b, t1, t2 };
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
}

describe('bootstrap on a shared empty database', () => {
  it('two SQLite connections bootstrapping one key at once both get the one key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-bootstrap-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'parley.db');
    const { a, b, t1, t2 } = await raceBootstrap(() => new SqliteStore(file));
    assert.deepEqual(a, b);
    assert.deepEqual(t1, t2);
    const check = new SqliteStore(file);
    try {
      assert.deepEqual(await check.listApiKeys(), [a]);
      assert.deepEqual(
        (await check.listTenants()).map((t) => t.id),
        ['default', 'acme'],
      );
    } finally {
      await check.close();
    }
  });

  it('two PostgreSQL stores bootstrapping one key at once both succeed with exactly one key and one tenant', async (t) => {
    const created = await createTestDatabase();
    if (created.db === null) return t.skip(created.reason);
    const db = created.db;
    t.after(() => db.drop());
    const { a, b, t1, t2 } = await raceBootstrap(() => new PostgresStore(db.url));
    assert.deepEqual(a, b);
    assert.deepEqual(t1, t2);
    // Counted with a plain connection, so that the assertion does not trust the code under test.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT (SELECT count(*)::int FROM api_keys) AS keys,
                (SELECT string_agg(id, ',' ORDER BY id) FROM tenants) AS tenants`,
      );
      assert.deepEqual(rows, [{ keys: 1, tenants: 'acme,default' }]);
    } finally {
      await client.end();
    }
  });
});
