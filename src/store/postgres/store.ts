// The distributed Store: PostgreSQL through a pg.Pool, for several processes sharing one database.
// Same semantics and records as SqliteStore; every write is one transaction, session writes fenced. This
// module holds the pool, its transactions and the migrations' lock; the resources are in
// postgres/tenants.ts, postgres/users.ts, postgres/files.ts, postgres/sessions.ts, postgres/messages.ts and
// postgres/webhooks.ts.
import pg from 'pg';
import { ComposedStore, partsOn } from '../composed-store.ts';
import { now } from '../rows.ts';
import type { Migration, SessionWrite, SessionWriteResult } from '../store.ts';
import type { Db, Queryable } from './db.ts';
import * as files from './files.ts';
import * as messages from './messages.ts';
import { postgresMigrations } from './migrations.ts';
import * as sessions from './sessions.ts';
import * as tenants from './tenants.ts';
import * as users from './users.ts';
import * as webhooks from './webhooks.ts';

/** The advisory lock under which migrations run, so that processes starting together apply each once. */
const MIGRATION_LOCK = 0x7061726c; // 'parl'

export class PostgresStore extends ComposedStore {
  readonly #pool: pg.Pool;
  readonly #migrations: readonly Migration[];
  #closed = false;

  /** What the resource modules use: reads on the pool and #tx. */
  readonly #db: Db = {
    rows: async (sql, params = []) => (await this.#pool.query(sql, params)).rows,
    tx: (fn) => this.#tx(fn),
  };

  protected readonly parts = partsOn(this.#db, { tenants, users, files, sessions, messages, webhooks });

  constructor(connectionString: string, migrations: readonly Migration[] = postgresMigrations) {
    super();
    this.#pool = new pg.Pool({ connectionString });
    // An idle connection that breaks (server restart) must not crash the process: the next query reports it.
    this.#pool.on('error', () => {});
    this.#migrations = migrations;
  }

  /** Runs `fn` in one transaction on one connection; rolls back when it throws. */
  async #tx<T>(fn: (c: Queryable) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
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
  }

  async migrate(): Promise<number> {
    return this.#tx(async (c) => {
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
  commitSession(write: SessionWrite): Promise<SessionWriteResult> {
    return this.#tx((c) => sessions.applySessionWrite(c, write));
  }
}
