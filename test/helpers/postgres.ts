// A fresh PostgreSQL database for a test run, on the server of PARLEY_TEST_DATABASE_URL or the local
// default. When no server answers, tests skip with the reason, except under CI=true, where that fails.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const serverUrl =
  process.env.PARLEY_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  /** Drops the database (closing whatever connections are left on it). */
  drop(): Promise<void>;
}

/** The same server URL with another database name. */
function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates `parley_test_<random>`; returns null with the reason when the server cannot be reached
 * (the caller skips), or throws under CI=true, where a missing server is a failure.
 */
export async function createTestDatabase(): Promise<{ db: TestDatabase } | { db: null; reason: string }> {
  const name = `parley_test_${randomBytes(6).toString('hex')}`;
  try {
    await admin((client) => client.query(`CREATE DATABASE ${name}`));
  } catch (err) {
    const reason = `PostgreSQL at ${new URL(serverUrl).host} is not usable (${(err as Error).message}); set PARLEY_TEST_DATABASE_URL`;
    if (process.env.CI === 'true') throw new Error(`${reason}. Under CI=true that is a failure.`);
    return { db: null, reason };
  }
  return {
    db: {
      url: withDatabase(serverUrl, name),
      drop: async () => {
        await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      },
    },
  };
}
