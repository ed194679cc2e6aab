// On PostgreSQL, which cannot store U+0000 in text or jsonb, text holding it is a 422 `string_nul` like on
// SQLite, never a 500 from the store (docs/internals/decisions.md#no-nul-in-text, issue 15 finding 4).
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../src/app.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../../src/auth/api-keys.ts';
import { loadConfig } from '../../../src/config.ts';
import { newId } from '../../../src/ids.ts';
import { PostgresStore } from '../../../src/store/postgres/store.ts';
import { makeTempDir } from '../../helpers/app.ts';
import { createTestDatabase } from '../../helpers/postgres.ts';

const NUL = '\u0000';
const created = await createTestDatabase();

if (created.db === null) {
  it('refuses U+0000 on PostgreSQL with 422', { skip: created.reason }, () => {});
} else {
  const db = created.db;
  // Its own hook, so that the database goes whatever the other clean-up steps do.
  after(() => db.drop());
  describe('U+0000 on PostgreSQL', () => {
    let app: FastifyInstance;
    let store: PostgresStore;
    let dataDir: string;
    const key = generateApiKey();
    const headers = { 'x-api-key': key };

    before(async () => {
      dataDir = await makeTempDir();
      store = new PostgresStore(db.url);
      const config = loadConfig({
        PARLEY_DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        PARLEY_TOKEN_SECRET: 'test-secret-for-nul-on-postgres-0123456789',
      });
      app = await buildApp(config, { store });
      await app.ready();
      await store.createTenant('t1', 't1');
      await store.createApiKey({
        id: newId('key'),
        tenant_id: 't1',
        hash: hashApiKey(key),
        prefix: apiKeyPrefix(key),
        agents: ['*'],
      });
    });
    after(async () => {
      await app?.close();
      await store?.close();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    const assertNul = (res: { statusCode: number; body: string }, loc: (string | number)[]) => {
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(JSON.parse(res.body).detail, [
        { loc, msg: 'Input should not contain the NUL character (U+0000)', type: 'string_nul' },
      ]);
    };

    it('answers 422, not 500, for U+0000 in a user name, a nested metadata value, a query or a path id', async () => {
      const ok = await app.inject({
        method: 'POST',
        url: '/v1/agents/users',
        headers,
        payload: { name: 'Ada' },
      });
      assert.equal(ok.statusCode, 201, ok.body);
      const user = ok.json();
      assertNul(
        await app.inject({ method: 'POST', url: '/v1/agents/users', headers, payload: { name: NUL } }),
        ['body', 'name'],
      );
      const nested = { metadata: { a: [{ b: `x${NUL}` }] } };
      assertNul(
        await app.inject({ method: 'PATCH', url: `/v1/agents/users/${user.id}`, headers, payload: nested }),
        ['body', 'metadata', 'a', 0, 'b'],
      );
      assertNul(await app.inject({ method: 'GET', url: '/v1/agents/users?email=%00', headers }), [
        'query',
        'email',
      ]);
      assertNul(await app.inject({ method: 'GET', url: '/v1/agents/users/%00', headers }), [
        'path',
        'user_id',
      ]);
    });

    it('answers 422, not 500, for U+0000 in a feedback comment or terminate reason sent with a session token', async () => {
      const start = await app.inject({
        method: 'POST',
        url: '/v1/agents/demo/conversations',
        headers,
        payload: {},
      });
      assert.equal(start.statusCode, 201, start.body);
      const { conversation, session_token } = start.json();
      const post = (rest: string, payload: object) =>
        app.inject({
          method: 'POST',
          url: `/v1/public/agents/conversations/${conversation.id}${rest}`,
          headers: { authorization: `Bearer ${session_token}` },
          payload,
        });
      assertNul(await post('/feedback', { score: 3, comment: `meh${NUL}` }), ['body', 'comment']);
      assertNul(await post('/terminate', { reason: NUL }), ['body', 'reason']);
      const closed = await post('/terminate', { reason: 'done' });
      assert.equal(closed.statusCode, 200, closed.body);
    });
  });
}
