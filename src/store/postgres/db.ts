// What PostgresStore's per-resource modules (users.ts, …) use of its pool: a read on the pool and a write
// in one transaction on one connection.
import pg from 'pg';
import type { Row } from '../rows.ts';

export type Queryable = Pick<pg.PoolClient, 'query'>;

export interface Db {
  rows(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs `fn` in one transaction on one connection; rolls back when it throws. */
  tx<T>(fn: (c: Queryable) => Promise<T>): Promise<T>;
}

/** A pool on the database and the Db the modules use of it. */
export function openPool(connectionString: string): { pool: pg.Pool; db: Db } {
  const pool = new pg.Pool({ connectionString });
  // An idle connection that breaks (server restart) must not crash the process: the next query reports it.
  pool.on('error', () => {});
  const db: Db = {
    rows: async (sql, params = []) => (await pool.query(sql, params)).rows,
    async tx(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
  };
  return { pool, db };
}
