// SqliteStore's one connection (node:sqlite, WAL, full fsync) and what its per-resource modules (users.ts,
// …) use of it: prepared statements, the write transaction and the group commit; plus running the statements
// of sql.ts, and the node:sqlite error codes the modules tell apart.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { serviceUnavailable } from '../../errors.ts';
import type { Statement } from '../sql.ts';

export interface SqliteDb {
  /** The prepared statement of `sql`, prepared once per text. */
  q(sql: string): StatementSync;
  /** Runs `fn` in a BEGIN IMMEDIATE transaction, or in a savepoint inside one: a throw undoes only `fn`. */
  write<T>(fn: () => T): T;
  /**
   * Runs `fn` in the next group commit: one transaction (one fsync) for every grouped write asked for during
   * this turn of the event loop, each in a savepoint of its own so that a throw undoes only its own write.
   * Settles once that transaction committed (or failed: then nothing of the group is stored).
   */
  grouped<T>(fn: () => T): Promise<T>;
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

/** Whether `err` is SQLITE_BUSY or one of its extended codes (the low byte is the primary code). */
const isBusy = (err: unknown) => ((sqliteCode(err) ?? 0) & 0xff) === SQLITE_BUSY;

/**
 * Switching a new file to WAL needs the write lock while holding a read lock, which SQLite refuses at
 * once instead of waiting out busy_timeout; so retry, briefly and synchronously (this runs at open only).
 */
function whileBusy<T>(fn: () => T, timeoutMs: number): T {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return fn();
    } catch (err) {
      if (!isBusy(err) || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

/**
 * The file opened in WAL mode with full fsync, every write in a BEGIN IMMEDIATE transaction so that
 * concurrent writers (the CLI, a second process) queue instead of failing.
 */
export class SqliteConnection implements SqliteDb {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  /** Answers read once in the transaction open now (oncePerTransaction); emptied when one begins. */
  readonly #transactionReads = new Map<string, unknown>();
  /** The grouped writes waiting for the next group commit (flushGrouped). */
  readonly #group: { fn: () => unknown; resolve(value: unknown): void; reject(error: unknown): void }[] = [];

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.#db = new DatabaseSync(file, { timeout: 5000 });
    whileBusy(() => this.#db.exec('PRAGMA journal_mode = WAL'), 5000);
    // FULL: a commit is on disk before we acknowledge it, even across a power loss.
    this.#db.exec('PRAGMA synchronous = FULL');
    this.#db.exec('PRAGMA foreign_keys = ON');
  }

  get isOpen(): boolean {
    return this.#db.isOpen;
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  close(): void {
    this.#db.close();
  }

  q(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  write<T>(fn: () => T): T {
    const nested = this.#db.isTransaction;
    // Emptied as a transaction begins, so whatever ended the last one (a COMMIT that threw included).
    if (!nested) this.#transactionReads.clear();
    try {
      // Prepared once, like every statement: exec would parse its text again on each of the two to three
      // dozen savepoints a group commit opens and releases.
      this.q(nested ? 'SAVEPOINT write' : 'BEGIN IMMEDIATE').run();
    } catch (err) {
      // Another process held the write lock past busy_timeout (in a cluster on one file, one stopped in a
      // transaction): nothing was written, so the caller may retry, on this process or another.
      if (isBusy(err)) throw serviceUnavailable('The store is busy; retry shortly.', err);
      throw err;
    }
    let result: T;
    try {
      result = fn();
    } catch (err) {
      // SQLite may have rolled the transaction back itself (a full disk, an interrupted statement).
      if (this.#db.isTransaction) this.#db.exec(nested ? 'ROLLBACK TO write; RELEASE write' : 'ROLLBACK');
      throw err;
    }
    this.q(nested ? 'RELEASE write' : 'COMMIT').run();
    return result;
  }

  grouped<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#group.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (this.#group.length === 1) setImmediate(() => this.flushGrouped());
    });
  }

  /** Commits the grouped writes waiting now, if any (at once: close() calls it before closing). */
  flushGrouped(): void {
    const batch = this.#group.splice(0);
    if (batch.length === 0) return;
    const outcomes: ({ value: unknown } | { error: unknown })[] = [];
    try {
      this.write(() => {
        // A write alone in its group needs no savepoint: its failure rolls back the transaction, which holds
        // nothing else. (A savepoint and its release are two more statements per write.)
        if (batch.length === 1 && batch[0]) {
          outcomes.push({ value: batch[0].fn() });
          return;
        }
        for (const { fn } of batch) {
          try {
            outcomes.push({ value: this.write(fn) });
          } catch (error) {
            outcomes.push({ error });
          }
        }
      });
    } catch (error) {
      // The transaction itself failed: nothing of the group is stored.
      for (const item of batch) item.reject(error);
      return;
    }
    for (const [i, item] of batch.entries()) {
      const outcome = outcomes[i];
      if (outcome && 'value' in outcome) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    }
  }

  oncePerTransaction<T>(key: string, read: () => T): T {
    if (!this.#db.isTransaction) throw new Error(`oncePerTransaction('${key}') outside a transaction`);
    if (this.#transactionReads.has(key)) return this.#transactionReads.get(key) as T;
    const value = read();
    this.#transactionReads.set(key, value);
    return value;
  }
}
