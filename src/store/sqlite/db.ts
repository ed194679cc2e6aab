// What SqliteStore's per-resource modules (sqlite/users.ts, …) need of it: prepared statements on its one
// connection and its write transaction; plus running the statements of sql.ts, and the node:sqlite error
// codes the modules tell apart.
import type { StatementSync } from 'node:sqlite';
import type { Statement } from '../sql.ts';

export interface SqliteDb {
  /** The prepared statement of `sql`, prepared once per text. */
  q(sql: string): StatementSync;
  /** Runs `fn` in a BEGIN IMMEDIATE transaction, or in a savepoint inside one: a throw undoes only `fn`. */
  write<T>(fn: () => T): T;
  /**
   * `read`'s answer, read once per transaction (call inside db.write): for a fact the transaction's own
   * writes do not change, asked by each of the many writes one group commit applies.
   */
  oncePerTransaction<T>(key: string, read: () => T): T;
}

export const get = (db: SqliteDb, s: Statement) => db.q(s.sql).get(...s.values);
export const all = (db: SqliteDb, s: Statement) => db.q(s.sql).all(...s.values);
export const run = (db: SqliteDb, s: Statement) => db.q(s.sql).run(...s.values);

/** SQLite's (extended) result code of an error thrown by node:sqlite; undefined for any other error. */
export const sqliteCode = (err: unknown): number | undefined =>
  err instanceof Error && 'errcode' in err && typeof err.errcode === 'number' ? err.errcode : undefined;

export const SQLITE_BUSY = 5;
export const SQLITE_CONSTRAINT_UNIQUE = 2067;
