// A SQLite file whose write lock another process holds past the busy timeout (in a cluster on one file, a
// process stopped mid-transaction) answers 503 service_unavailable with Retry-After, not a 500, and stores
// nothing: the same keyed request sent again once the lock is free is served whole, once.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { it } from 'node:test';
import {
  allMessages,
  assertServedOnce,
  client,
  createSession,
  send,
  useSessionApp,
} from '../../helpers/sessions.ts';

const t = useSessionApp();
const api = client(t);

/** Runs `fn` while another connection to the app's file holds its write lock. */
async function whileLocked<T>(fn: () => Promise<T>): Promise<T> {
  const other = new DatabaseSync(join(t.dataDir, 'parley.db'));
  other.exec('BEGIN IMMEDIATE');
  try {
    return await fn();
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
}

it('a send while another process holds the write lock is answered 503 service_unavailable, and its retry is served once', async () => {
  const session = await createSession(t);
  const headers = { 'idempotency-key': 'busy-1' };
  const refused = await whileLocked(() => send(t, session.id, { content: 'hello' }, headers));
  assert.equal(refused.statusCode, 503, refused.body);
  assert.equal(refused.json().error.code, 'service_unavailable');
  assert.equal(refused.headers['retry-after'], '1');
  assert.deepEqual(await allMessages(t, session.id), []);

  await assertServedOnce(t, session.id, 'hello', headers);
});

it('creating a session while the write lock is held is answered 503 and creates none', async () => {
  const refused = await whileLocked(() => api.post('/v1/agents/demo/sessions', {}));
  assert.equal(refused.statusCode, 503, refused.body);
  assert.equal(refused.json().error.code, 'service_unavailable');
  const list = await api.get('/v1/agents/sessions');
  assert.equal(list.statusCode, 200, list.body);
  assert.equal(list.json().items.length, 1, 'only the session of the first test');
});
