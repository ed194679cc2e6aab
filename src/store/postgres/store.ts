// The distributed Store: PostgreSQL through a pg.Pool (db.ts), for several processes sharing one database.
// Same semantics and records as SqliteStore; every write is one transaction, session writes fenced. This
// module holds the migrations' runner (under an advisory lock) and the session commit; the resources are in
// the modules beside it (tenants.ts, users.ts, files.ts, sessions.ts, messages.ts, webhooks.ts, usage.ts), composed
// by ComposedStore.
import type pg from 'pg';
import { ComposedStore } from '../composed-store.ts';
import { now } from '../rows.ts';
import type { Migration, SessionWrite, SessionWriteResult, Store } from '../store.ts';
import { tellRefused } from '../webhook-outbox.ts';
import { type Db, openPool } from './db.ts';
import * as files from './files.ts';
import * as messages from './messages.ts';
import { postgresMigrations } from './migrations.ts';
import * as sessions from './sessions.ts';
import * as tenants from './tenants.ts';
import * as usage from './usage.ts';
import * as users from './users.ts';
import * as webhooks from './webhooks.ts';

/** The advisory lock under which migrations run, so that processes starting together apply each once. */
const MIGRATION_LOCK = 0x7061726c; // 'parl'

export class PostgresStore extends ComposedStore<Db> implements Store {
  readonly #pool: pg.Pool;
  readonly #db: Db;
  readonly #migrations: readonly Migration[];
  #closed = false;

  constructor(connectionString: string, migrations: readonly Migration[] = postgresMigrations) {
    const { pool, db } = openPool(connectionString);
    super(db, { tenants, users, files, sessions, messages, webhooks, usage });
    this.#pool = pool;
    this.#db = db;
    this.#migrations = migrations;
  }

  async migrate(): Promise<number> {
    return this.#db.tx(async (c) => {
      // Held until commit: a second process waits here, then finds every migration applied.
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await c.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
      );
      const done = new Set(
        (await c.query('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
      );
      for (const m of this.#migrations) {
        if (done.has(m.version)) continue;
        await c.query(m.sql);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          now(),
        ]);
      }
      const row = (await c.query('SELECT max(version) AS v FROM schema_migrations')).rows[0];
      return Number(row?.v ?? 0);
    });
  }

  async ping(): Promise<void> {
    await this.#pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  /** One transaction per write (no group commit): a stale write fails alone and changes nothing. */
  async commitSession(write: SessionWrite): Promise<SessionWriteResult> {
    const result = await this.#db.tx((c) => sessions.applySessionWrite(this.#db, c, write));
    tellRefused(this.#db, result.webhook_refused);
    return result;
  }
}
