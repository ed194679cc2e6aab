// The store the configuration asks for, loaded on demand: the CLI opens it without the HTTP stack, and a
// process on SQLite never loads the PostgreSQL client (nor the reverse). app.ts builds the service on it.
import { join } from 'node:path';
import type { Config } from '../config.ts';
import type { Store } from './store.ts';

/** The SQLite database of a data directory. */
export const sqliteFile = (dataDir: string) => join(dataDir, 'parley.db');

export async function openStore(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<Store> {
  if (config.databaseUrl) {
    const { PostgresStore } = await import('./postgres/store.ts');
    return new PostgresStore(config.databaseUrl);
  }
  const { SqliteStore } = await import('./sqlite/store.ts');
  return new SqliteStore(sqliteFile(config.dataDir));
}
