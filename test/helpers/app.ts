// Builds a real app on a fresh SQLite file in a temporary directory, with one tenant and API key.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../src/auth/api-keys.ts';
import { loadConfig } from '../../src/config.ts';
import { newId } from '../../src/ids.ts';
import { SqliteStore } from '../../src/store/sqlite.ts';
import type { Store } from '../../src/store/store.ts';

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

export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const dataDir = await makeTempDir();
  const config = loadConfig({ PARLEY_DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });
  const store = new SqliteStore(join(dataDir, 'parley.db'));
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
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
