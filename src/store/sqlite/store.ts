// The embedded Store: one SQLite file (Node's built-in node:sqlite) in WAL mode with full fsync, every write
// in a BEGIN IMMEDIATE transaction so that concurrent writers (the CLI, a second process) queue instead of
// failing. This module holds the connection, its transactions, the statement cache and the group commit of
// session writes; the resources are in sqlite/tenants.ts, sqlite/users.ts, sqlite/files.ts,
// sqlite/sessions.ts, sqlite/messages.ts and sqlite/webhooks.ts.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { ComposedStore, partsOn } from '../composed-store.ts';
import { now } from '../rows.ts';
import type { Migration, SessionWrite, SessionWriteResult } from '../store.ts';
import { SQLITE_BUSY, type SqliteDb, sqliteCode } from './db.ts';
import * as files from './files.ts';
import * as messages from './messages.ts';
import { sqliteMigrations } from './migrations.ts';
import * as sessions from './sessions.ts';
import * as tenants from './tenants.ts';
import * as users from './users.ts';
import * as webhooks from './webhooks.ts';

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
      // The low byte is the primary code: SQLITE_BUSY and its extended codes.
      const busy = ((sqliteCode(err) ?? 0) & 0xff) === SQLITE_BUSY;
      if (!busy || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

export class SqliteStore extends ComposedStore {
  readonly #db: DatabaseSync;
  readonly #migrations: readonly Migration[];
  readonly #statements = new Map<string, StatementSync>();
  readonly #pendingWrites: {
    write: SessionWrite;
    resolve(result: SessionWriteResult): void;
    reject(error: unknown): void;
  }[] = [];

  /** Answers read once in the transaction open now (oncePerTransaction); emptied when one begins. */
  readonly #transactionReads = new Map<string, unknown>();

  /** What the resource modules use: the statement cache, #write and the reads once per transaction. */
  readonly #handle: SqliteDb = {
    q: (sql) => this.#q(sql),
    write: (fn) => this.#write(fn),
    oncePerTransaction: <T>(key: string, read: () => T): T => {
      if (!this.#db.isTransaction) throw new Error(`oncePerTransaction('${key}') outside a transaction`);
      if (this.#transactionReads.has(key)) return this.#transactionReads.get(key) as T;
      const value = read();
      this.#transactionReads.set(key, value);
      return value;
    },
  };

  protected readonly parts = partsOn(this.#handle, { tenants, users, files, sessions, messages, webhooks });

  constructor(file: string, migrations: readonly Migration[] = sqliteMigrations) {
    super();
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.#db = new DatabaseSync(file, { timeout: 5000 });
    whileBusy(() => this.#db.exec('PRAGMA journal_mode = WAL'), 5000);
    // FULL: a commit is on disk before we acknowledge it, even across a power loss.
    this.#db.exec('PRAGMA synchronous = FULL');
    this.#db.exec('PRAGMA foreign_keys = ON');
    this.#migrations = migrations;
  }

  /** A prepared statement, prepared once per SQL text. */
  #q(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction, or, inside one already open, in a savepoint: either way a
   * throw undoes what `fn` wrote, and only that.
   */
  #write<T>(fn: () => T): T {
    const nested = this.#db.isTransaction;
    // Emptied as a transaction begins, so whatever ended the last one (a COMMIT that threw included).
    if (!nested) this.#transactionReads.clear();
    this.#db.exec(nested ? 'SAVEPOINT write' : 'BEGIN IMMEDIATE');
    let result: T;
    try {
      result = fn();
    } catch (err) {
      // SQLite may have rolled the transaction back itself (a full disk, an interrupted statement).
      if (this.#db.isTransaction) this.#db.exec(nested ? 'ROLLBACK TO write; RELEASE write' : 'ROLLBACK');
      throw err;
    }
    this.#db.exec(nested ? 'RELEASE write' : 'COMMIT');
    return result;
  }

  async migrate(): Promise<number> {
    this.#db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    );
    for (const m of this.#migrations) {
      this.#write(() => {
        // Re-checked inside the lock: two processes starting together apply each migration once.
        const done = this.#q('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
        if (done) return;
        this.#db.exec(m.sql);
        this.#q('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          m.version,
          m.name,
          now(),
        );
      });
    }
    const row = this.#q('SELECT max(version) AS v FROM schema_migrations').get();
    return Number(row?.v ?? 0);
  }

  async ping(): Promise<void> {
    this.#q('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (!this.#db.isOpen) return;
    this.#flushSessionWrites();
    this.#db.close();
  }

  /**
   * Group commit: the session writes asked for during one turn of the event loop are applied together in
   * one transaction (one fsync), each in a savepoint of its own so that a refused write (a stale fence)
   * refuses only itself. Every caller is answered after that transaction committed.
   */
  commitSession(write: SessionWrite): Promise<SessionWriteResult> {
    return new Promise((resolve, reject) => {
      this.#pendingWrites.push({ write, resolve, reject });
      if (this.#pendingWrites.length === 1) setImmediate(() => this.#flushSessionWrites());
    });
  }

  #flushSessionWrites(): void {
    const batch = this.#pendingWrites.splice(0);
    if (batch.length === 0) return;
    const outcomes: ({ value: SessionWriteResult } | { error: unknown })[] = [];
    try {
      this.#write(() => {
        // A write alone in its batch needs no savepoint: its failure rolls back the transaction, which holds
        // nothing else. (A savepoint and its release are two more statements per write.)
        if (batch.length === 1 && batch[0]) {
          outcomes.push({ value: sessions.applySessionWrite(this.#handle, batch[0].write) });
          return;
        }
        for (const { write } of batch) {
          try {
            outcomes.push({ value: this.#applyInSavepoint(write) });
          } catch (error) {
            outcomes.push({ error });
          }
        }
      });
    } catch (error) {
      // The transaction itself failed: nothing of the batch is stored.
      for (const item of batch) item.reject(error);
      return;
    }
    for (const [i, item] of batch.entries()) {
      const outcome = outcomes[i];
      if (outcome && 'value' in outcome) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    }
  }

  /** Nested inside #write, this runs in a SAVEPOINT: a throw undoes this write only. */
  readonly #applyInSavepoint = (write: SessionWrite): SessionWriteResult =>
    this.#write(() => sessions.applySessionWrite(this.#handle, write));
}
