// A listening app for the Open Responses tests on either store (SQLite in a temporary directory, or a fresh
// PostgreSQL database), which a test can restart on the same store: what a paused response waits for must
// survive the process. `{ skip }` says why when PostgreSQL is not there (a failure under CI=true).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { buildApp } from '../../src/app.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../src/auth/api-keys.ts';
import { loadConfig } from '../../src/config.ts';
import { newId } from '../../src/ids.ts';
import { PostgresStore } from '../../src/store/postgres/store.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { Store } from '../../src/store/store.ts';
import { makeTempDir } from './app.ts';
import { createTestDatabase } from './postgres.ts';
import { writeAgentsFile } from './sessions.ts';

export type StoreKind = 'sqlite' | 'postgres';
export const storeKinds: readonly StoreKind[] = ['sqlite', 'postgres'];

export interface ResponsesApp {
  /** The listening URL of the app running now (a restart listens on another port). */
  readonly base: string;
  readonly apiKey: string;
  readonly store: Store;
  /** The official client, pointed at the app running now. */
  openai(): OpenAI;
  /** Stops the app and starts a new one on the same store, as a restarted process would. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startResponsesApp(
  kind: StoreKind,
  agents: object[],
  env: Record<string, string> = {},
): Promise<ResponsesApp | { skip: string }> {
  let url: string | null = null;
  let drop = async () => {};
  if (kind === 'postgres') {
    const created = await createTestDatabase();
    if (created.db === null) return { skip: created.reason };
    url = created.db.url;
    drop = () => created.db.drop();
  }
  const dataDir = await makeTempDir('parley-responses-');
  const catalogue = await writeAgentsFile(agents);
  const config = loadConfig({
    PARLEY_DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    PARLEY_AGENTS_FILE: catalogue.file,
    PARLEY_TOKEN_SECRET: 'responses-test-secret-0123456789abcdef',
    ...env,
  });
  const open = (): Store => (url ? new PostgresStore(url) : new SqliteStore(join(dataDir, 'parley.db')));
  let store = open();
  let app: FastifyInstance = await buildApp(config, { store });
  let base = await app.listen({ port: 0, host: '127.0.0.1' });
  await store.createTenant('t1', 't1');
  const apiKey = generateApiKey();
  await store.createApiKey({
    id: newId('key'),
    tenant_id: 't1',
    hash: hashApiKey(apiKey),
    prefix: apiKeyPrefix(apiKey),
    agents: ['*'],
  });
  const stop = async () => {
    await app.close();
    await store.close();
  };
  return {
    get base() {
      return base;
    },
    apiKey,
    get store() {
      return store;
    },
    openai: () => new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0 }),
    async restart() {
      await stop();
      store = open();
      app = await buildApp(config, { store });
      base = await app.listen({ port: 0, host: '127.0.0.1' });
    },
    async close() {
      await stop();
      await drop();
      await catalogue.remove();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
