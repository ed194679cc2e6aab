// A PostgreSQL database that refuses connections, or drops the ones it had (a server restarting), answers
// requests 503 service_unavailable with Retry-After, not a 500, and loses nothing: once it takes
// connections again the same keyed send is served once.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import pg from 'pg';
import { PostgresStore } from '../../../src/store/postgres/store.ts';
import { buildTestApp } from '../../helpers/app.ts';
import { createTestDatabase, serverUrl } from '../../helpers/postgres.ts';
import { assertServedOnce, client, createSession, send } from '../../helpers/sessions.ts';

const created = await createTestDatabase();

/** Runs `sql` on the server's maintenance connection (not the test database's). */
async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

it('a send while the database refuses connections is answered 503, and its retry is served once', {
  skip: created.db === null ? created.reason : false,
}, async () => {
  const db = created.db;
  assert.ok(db);
  after(() => db.drop());
  const name = new URL(db.url).pathname.slice(1);
  const t = await buildTestApp({}, () => new PostgresStore(db.url));
  after(() => t.close());
  const session = await createSession(t);
  const headers = { 'idempotency-key': 'unreachable-1' };

  // The database takes no new connection and its open ones are cut, as while its server restarts.
  await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`);
  try {
    const refused = await send(t, session.id, { content: 'hello' }, headers);
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json().error.code, 'service_unavailable');
    assert.equal(refused.headers['retry-after'], '1');
    const read = await client(t).get(`/v1/agents/sessions/${session.id}/messages`);
    assert.equal(read.statusCode, 503, read.body);
  } finally {
    await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
  }

  await assertServedOnce(t, session.id, 'hello', headers);
});
