// The embedded Store: one SQLite file (Node's built-in node:sqlite) on the connection of db.ts. This module
// holds the migrations' runner and the lifecycle, and sends session writes to the connection's group commit;
// the resources are in the modules beside it (tenants.ts, users.ts, files.ts, sessions.ts, messages.ts,
// webhooks.ts, usage.ts), composed by ComposedStore.
import { ComposedStore } from '../composed-store.ts';
import { now } from '../rows.ts';
import type { Migration, SessionWrite, SessionWriteResult, Store } from '../store.ts';
import { tellRefused } from '../webhook-outbox.ts';
import { Checkpointer } from './checkpointer.ts';
import { SqliteConnection } from './db.ts';
import * as files from './files.ts';
import * as messages from './messages.ts';
import { sqliteMigrations } from './migrations.ts';
import * as sessions from './sessions.ts';
import * as tenants from './tenants.ts';
import * as usage from './usage.ts';
import * as users from './users.ts';
import * as webhooks from './webhooks.ts';

/** How often the checkpointer copies what was committed since: a tenth of a second of commits at most. */
const CHECKPOINT_MS = 100;
/** The WAL's size (in 4 KiB pages: 16 MiB) past which a commit checkpoints on the main thread after all. */
const FALLBACK_CHECKPOINT_PAGES = 4096;

export class SqliteStore extends ComposedStore<SqliteConnection> implements Store {
  readonly #db: SqliteConnection;
  readonly #migrations: readonly Migration[];
  /** The WAL's checkpoints, on a thread of their own (none for an in-memory database). */
  readonly checkpointer: Checkpointer | null;
  constructor(file: string, migrations: readonly Migration[] = sqliteMigrations) {
    const db = new SqliteConnection(file);
    super(db, { tenants, users, files, sessions, messages, webhooks, usage });
    this.#db = db;
    this.#migrations = migrations;
    this.checkpointer = file === ':memory:' ? null : new Checkpointer(file, { intervalMs: CHECKPOINT_MS });
    // The main connection checkpoints only if the worker falls far behind.
    if (this.checkpointer) db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`);
  }

  async migrate(): Promise<number> {
    this.#db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    );
    for (const m of this.#migrations) {
      this.#db.write(() => {
        // Re-checked inside the lock: two processes starting together apply each migration once.
        const done = this.#db.q('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
        if (done) return;
        this.#db.exec(m.sql);
        this.#db
          .q('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(m.version, m.name, now());
      });
    }
    const row = this.#db.q('SELECT max(version) AS v FROM schema_migrations').get();
    return Number(row?.v ?? 0);
  }

  async ping(): Promise<void> {
    this.#db.q('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (!this.#db.isOpen) return;
    this.#db.flushGrouped();
    await this.checkpointer?.stop();
    this.#db.close();
  }

  /**
   * In the connection's group commit (db.ts grouped): the session writes, webhook claims and attempts asked
   * for during one turn of the event loop share one transaction and one fsync. Every caller is answered after
   * that transaction committed; a refused write (a stale fence) refuses only itself.
   */
  async commitSession(write: SessionWrite): Promise<SessionWriteResult> {
    const result = await this.#db.grouped(() => sessions.applySessionWrite(this.#db, write));
    tellRefused(this.#db, result.webhook_refused);
    return result;
  }
}
