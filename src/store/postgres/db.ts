// What PostgresStore's per-resource modules (postgres/users.ts, …) need of it: a read on the pool and a
// write in one transaction on one connection.
import type pg from 'pg';
import type { Row } from '../rows.ts';

export type Queryable = Pick<pg.PoolClient, 'query'>;

export interface Db {
  rows(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs `fn` in one transaction on one connection; rolls back when it throws. */
  tx<T>(fn: (c: Queryable) => Promise<T>): Promise<T>;
}
