// Builds a real app on a fresh SQLite file in a temporary directory, with one tenant and API key; useApp
// gives a test file (or suite) one, built before its tests and closed after them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../src/auth/api-keys.ts';
import { loadConfig } from '../../src/config.ts';
import { newId } from '../../src/ids.ts';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { Store } from '../../src/store/store.ts';
import { createTestDatabase } from './postgres.ts';

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  dataDir: string;
  /** An API key of tenant `t1` for every agent. */
  apiKey: string;
  /** Creates another key; `agents` defaults to every agent. */
  createKey(tenant: string, agents?: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function makeTempDir(prefix = 'parley-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/**
 * An app on a fresh data directory; its store is SQLite there unless `makeStore` gives another, or, with
 * PARLEY_TEST_STORE=postgres, a fresh PostgreSQL database (how a suite written for SQLite is run on
 * PostgreSQL too, e.g. test/http/responses/postgres.test.ts).
 */
export async function buildTestApp(
  env: Record<string, string> = {},
  makeStore?: (dataDir: string) => Store,
): Promise<TestApp> {
  let drop = async () => {};
  if (!makeStore && process.env.PARLEY_TEST_STORE === 'postgres') {
    const created = await createTestDatabase();
    if (!created.db) throw new Error(`PARLEY_TEST_STORE=postgres: ${created.reason}`);
    const { db } = created;
    drop = () => db.drop();
    makeStore = () => new PostgresStore(db.url);
  }
  const dataDir = await makeTempDir();
  const config = loadConfig({ PARLEY_DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });
  const store = (makeStore ?? ((dir) => new SqliteStore(join(dir, 'parley.db'))))(dataDir);
  const app = await buildApp(config, { store });
  await app.ready();

  const createKey = async (tenant: string, agents: string[] = ['*']) => {
    if (!(await store.getTenant(tenant))) await store.createTenant(tenant, tenant);
    const key = generateApiKey();
    await store.createApiKey({
      id: newId('key'),
      tenant_id: tenant,
      hash: hashApiKey(key),
      prefix: apiKeyPrefix(key),
      agents,
    });
    return key;
  };
  const apiKey = await createKey('t1');

  return {
    app,
    store,
    dataDir,
    apiKey,
    createKey,
    async close() {
      await app.close();
      await store.close();
      await drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The id of an API key of the app (its first key by default), as session tokens name it (`kid`). */
export async function apiKeyIdOf(t: Pick<TestApp, 'store' | 'apiKey'>, key = t.apiKey): Promise<string> {
  const record = await t.store.findApiKeyByHash(hashApiKey(key), { includeRevoked: true });
  if (!record) throw new Error('no such key in this app');
  return record.id;
}

export interface UseAppOptions {
  env?: Record<string, string>;
  /**
   * More set-up, run in the same before() hook once the app is built. A file's top-level before() hooks
   * run concurrently, so set-up that needs the app belongs here rather than in a hook of its own.
   */
  setUp?: (t: TestApp) => Promise<void>;
}

/**
 * The app of the test file, or of the suite this is called in: `build` (then `setUp`) runs in a before()
 * hook and the app is closed in an after() hook. The handle reads the app built for the current run, so
 * use it in tests and hooks, not at the top level.
 */
export function useApp(build: () => Promise<TestApp>, setUp?: (t: TestApp) => Promise<void>): TestApp {
  let built: TestApp | undefined;
  const current = (): TestApp => {
    if (!built) throw new Error('the test app is built in a before() hook: use it in tests and hooks');
    return built;
  };
  const handle: TestApp = {
    get app() {
      return current().app;
    },
    get store() {
      return current().store;
    },
    get dataDir() {
      return current().dataDir;
    },
    get apiKey() {
      return current().apiKey;
    },
    createKey: (tenant, agents) => current().createKey(tenant, agents),
    close: () => current().close(),
  };
  before(async () => {
    built = await build();
    await setUp?.(handle);
  });
  after(() => built?.close());
  return handle;
}

/** useApp of buildTestApp: the built-in catalogue. */
export const useTestApp = ({ env = {}, setUp }: UseAppOptions = {}) => useApp(() => buildTestApp(env), setUp);
