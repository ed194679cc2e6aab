// What PostgresStore's per-resource modules (users.ts, …) use of its pool: a read on the pool and a write
// in one transaction on one connection.
import pg from 'pg';
import { serviceUnavailable } from '../../errors.ts';
import type { Row } from '../rows.ts';

export type Queryable = Pick<pg.PoolClient, 'query'>;

export interface Db {
  rows(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs `fn` in one transaction on one connection; rolls back when it throws. */
  tx<T>(fn: (c: Queryable) => Promise<T>): Promise<T>;
}

/**
 * Whether `err` says the database could not be reached or the connection broke (a server restarting or
 * refusing connections), rather than that the statement was refused: class 08 (connection exception), an
 * administrator or crash shutdown, too many connections, or the socket's own error.
 */
function isUnreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = 'code' in err && typeof err.code === 'string' ? err.code : '';
  return (
    code.startsWith('08') ||
    ['57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code) ||
    err.message.startsWith('Connection terminated')
  );
}

/** A connection-level failure as 503 service_unavailable (a keyed retry is safe), anything else as it is. */
const unreachable = 'The database cannot be reached; retry shortly.';
const asUnavailable = (err: unknown) => (isUnreachable(err) ? serviceUnavailable(unreachable, err) : err);

/** A pool on the database and the Db the modules use of it. */
export function openPool(connectionString: string): { pool: pg.Pool; db: Db } {
  const pool = new pg.Pool({ connectionString });
  // An idle connection that breaks (server restart) must not crash the process: the next query reports it.
  pool.on('error', () => {});
  // Whatever keeps a connection from opening (a server down, restarting, or not taking connections to the
  // database) leaves this process unable to serve for now.
  const connect = () =>
    pool.connect().catch((err: unknown) => Promise.reject(serviceUnavailable(unreachable, err)));
  const db: Db = {
    async rows(sql, params = []) {
      const client = await connect();
      let broken: Error | undefined;
      try {
        return (await client.query(sql, params)).rows;
      } catch (err) {
        if (isUnreachable(err)) broken = err as Error;
        throw asUnavailable(err);
      } finally {
        // A broken connection is destroyed rather than pooled again.
        client.release(broken);
      }
    },
    async tx(fn) {
      const client = await connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        if (isUnreachable(err)) broken = err as Error;
        else await client.query('ROLLBACK').catch(() => {});
        throw asUnavailable(err);
      } finally {
        client.release(broken);
      }
    },
  };
  return { pool, db };
}
