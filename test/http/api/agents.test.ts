// GET /v1/agents on SQLite and PostgreSQL: the agents a key may use (a scoped key sees only its own), each
// with its provider, tools and their approval policies, MCP servers as configured, and handoff; never a
// secret of the catalogue.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PostgresStore } from '../../../src/store/postgres/store.ts';
import { buildTestApp, type TestApp } from '../../helpers/app.ts';
import { postgresMissing } from '../../helpers/approvals.ts';
import { createTestDatabase } from '../../helpers/postgres.ts';
import { assertError, client, writeAgentsFile } from '../../helpers/sessions.ts';

const pgMissing = await postgresMissing();

const agents = [
  {
    id: 'support',
    name: 'Support',
    description: 'Orders and refunds',
    provider: 'openai-compatible',
    model: 'small-model',
    base_url: 'https://user:hunter2@models.example.com/v1',
    api_key_env: 'SUPPORT_API_KEY',
    tools: [
      {
        name: 'refund',
        description: 'Refunds an order.',
        url: 'https://tools.example.com/refund?token=s3cret',
        approval: 'operator',
      },
      { name: 'lookup', description: 'Finds an order.', url: 'https://tools.example.com/lookup' },
    ],
    mcp_servers: [
      // Nothing listens there: the start does not wait for MCP servers, and the listing does not connect.
      {
        name: 'crm',
        url: 'http://127.0.0.1:9/mcp',
        tools: ['find_order', 'close_order'],
        approval_tools: { close_order: 'user' },
      },
      { name: 'kb', url: 'http://127.0.0.1:9/kb', approval: 'operator', approval_tools: { search: 'none' } },
    ],
    handoff: { enabled: true, user_can_request: true },
  },
  { id: 'demo', instructions: 'A plain scripted agent.' },
];

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`GET /v1/agents (${kind})`, { skip: kind === 'postgres' ? pgMissing : undefined }, () => {
    let t: TestApp;
    const cleanups: (() => Promise<void>)[] = [];
    before(async () => {
      const file = await writeAgentsFile(agents);
      cleanups.push(file.remove);
      const env = { PARLEY_AGENTS_FILE: file.file, SUPPORT_API_KEY: 'sk-very-secret' };
      if (kind === 'sqlite') t = await buildTestApp(env);
      else {
        const created = await createTestDatabase();
        if (!created.db) throw new Error(created.reason);
        const { db } = created;
        cleanups.push(db.drop);
        t = await buildTestApp(env, () => new PostgresStore(db.url));
      }
    });
    after(async () => {
      await t?.close();
      for (const fn of cleanups.reverse()) await fn();
    });

    it('lists every agent of the catalogue, in its order, with tools, approvals and handoff', async () => {
      const res = await client(t).get('/v1/agents');
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), {
        items: [
          {
            id: 'support',
            name: 'Support',
            description: 'Orders and refunds',
            provider: 'openai-compatible',
            model: 'small-model',
            tools: [
              { name: 'refund', approval: 'operator' },
              { name: 'lookup', approval: 'none' },
              { name: 'handoff_to_human', approval: 'none' },
            ],
            mcp_servers: [
              {
                name: 'crm',
                transport: 'http',
                all_tools: false,
                approval: 'none',
                tools: [
                  { name: 'crm__find_order', approval: 'none' },
                  { name: 'crm__close_order', approval: 'user' },
                ],
              },
              {
                name: 'kb',
                transport: 'http',
                all_tools: true,
                approval: 'operator',
                tools: [{ name: 'kb__search', approval: 'none' }],
              },
            ],
            expose_tools: false,
            handoff: { enabled: true, user_can_request: true },
          },
          {
            id: 'demo',
            name: null,
            description: null,
            provider: 'scripted',
            model: 'scripted',
            tools: [],
            mcp_servers: [],
            expose_tools: false,
            handoff: { enabled: false, user_can_request: false },
          },
        ],
      });
    });

    it('never shows a secret of the catalogue: keys, URLs, their credentials, variables', async () => {
      const body = (await client(t).get('/v1/agents')).body;
      for (const secret of [
        'hunter2',
        's3cret',
        'sk-very-secret',
        'SUPPORT_API_KEY',
        'example.com',
        '127.0.0.1',
      ]) {
        assert.ok(!body.includes(secret), secret);
      }
    });

    it('shows a key scoped to some agents only those, and a key of no known agent none', async () => {
      const scoped = await t.createKey('t1', ['demo']);
      assert.deepEqual(
        (await client(t, scoped).get('/v1/agents')).json().items.map((a: { id: string }) => a.id),
        ['demo'],
      );
      const none = await t.createKey('t1', ['gone']);
      assert.deepEqual((await client(t, none).get('/v1/agents')).json(), { items: [] });
    });

    it('answers 401 without an API key', async () => {
      assertError(await t.app.inject({ method: 'GET', url: '/v1/agents' }), 401, 'unauthorized');
    });
  });
}
