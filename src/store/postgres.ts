// The distributed Store: PostgreSQL through a pg.Pool, for several processes sharing one database.
// Same semantics and records as SqliteStore; every write is one transaction, session writes fenced.
import pg from 'pg';
import { SHARD_COUNT } from '../cluster/shard.ts';
import * as files from './postgres-files.ts';
import { postgresMigrations } from './postgres-migrations.ts';
import {
  type Db,
  json,
  now,
  type Queryable,
  type Row,
  sessionColumns,
  toApiKey,
  toFeedback,
  toIdempotency,
  toMessage,
  toSession,
  Where,
} from './postgres-rows.ts';
import { applySessionWrite, insertSession } from './postgres-sessions.ts';
import * as users from './postgres-users.ts';
import type { Migration } from './sqlite-migrations.ts';
import {
  type ApiKeyRecord,
  type Feedback,
  type Fence,
  type FileFilter,
  type IdempotencyRecord,
  type MessageRecord,
  type NewApiKey,
  type NewFile,
  type NewSession,
  type Page,
  type PageRequest,
  type SessionFilter,
  type SessionRecord,
  type SessionWrite,
  type SessionWriteResult,
  type Store,
  type StoredFile,
  type Tenant,
  toPage,
  type User,
  type UserFields,
  type UserFilter,
} from './store.ts';

/** The advisory lock under which migrations run, so that processes starting together apply each once. */
const MIGRATION_LOCK = 0x7061726c; // 'parl'

export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly #pool: pg.Pool;
  readonly #migrations: readonly Migration[];
  #closed = false;

  constructor(connectionString: string, migrations: readonly Migration[] = postgresMigrations) {
    this.#pool = new pg.Pool({ connectionString });
    // An idle connection that breaks (server restart) must not crash the process: the next query reports it.
    this.#pool.on('error', () => {});
    this.#migrations = migrations;
  }

  readonly #db: Db = {
    rows: (sql, params) => this.#rows(sql, params),
    tx: (fn) => this.#tx(fn),
  };

  async #rows(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.#pool.query(sql, params)).rows;
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
        (await c.query('SELECT version FROM schema_migrations')).rows.map((r) => r.version as number),
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
      return (row?.v as number | null) ?? 0;
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

  // --- tenants and keys

  async createTenant(id: string, name: string): Promise<Tenant> {
    const tenant = { id, name, created_at: now() };
    await this.#tx((c) =>
      c.query('INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)', [
        id,
        name,
        tenant.created_at,
      ]),
    );
    return tenant;
  }

  async getTenant(id: string): Promise<Tenant | null> {
    const [row] = await this.#rows('SELECT id, name, created_at FROM tenants WHERE id = $1', [id]);
    return (row as unknown as Tenant | undefined) ?? null;
  }

  async listTenants(): Promise<Tenant[]> {
    return (await this.#rows(
      'SELECT id, name, created_at FROM tenants ORDER BY created_at, id',
    )) as unknown as Tenant[];
  }

  async createApiKey(key: NewApiKey): Promise<ApiKeyRecord> {
    const created_at = now();
    await this.#tx((c) =>
      c.query(
        'INSERT INTO api_keys (id, tenant_id, hash, prefix, agents, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [key.id, key.tenant_id, key.hash, key.prefix, JSON.stringify(key.agents), created_at],
      ),
    );
    return {
      id: key.id,
      tenant_id: key.tenant_id,
      prefix: key.prefix,
      agents: [...key.agents],
      created_at,
      revoked_at: null,
    };
  }

  async findApiKeyByHash(
    hash: string,
    options: { includeRevoked?: boolean } = {},
  ): Promise<ApiKeyRecord | null> {
    const sql = options.includeRevoked
      ? 'SELECT * FROM api_keys WHERE hash = $1'
      : 'SELECT * FROM api_keys WHERE hash = $1 AND revoked_at IS NULL';
    const [row] = await this.#rows(sql, [hash]);
    return row ? toApiKey(row) : null;
  }

  async listApiKeys(tenantId?: string): Promise<ApiKeyRecord[]> {
    const rows =
      tenantId === undefined
        ? await this.#rows('SELECT * FROM api_keys ORDER BY created_at, id')
        : await this.#rows('SELECT * FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id', [tenantId]);
    return rows.map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    const result = await this.#tx((c) =>
      c.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now(), id]),
    );
    return result.rowCount === 1;
  }

  async countActiveApiKeys(): Promise<number> {
    const [row] = await this.#rows('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL');
    return row?.n as number;
  }

  // --- users (postgres-users.ts) and files (postgres-files.ts)

  createUser(tenantId: string, id: string, fields: UserFields): Promise<User> {
    return users.createUser(this.#db, tenantId, id, fields);
  }

  getUser(tenantId: string, id: string): Promise<User | null> {
    return users.getUser(this.#db, tenantId, id);
  }

  listUsers(tenantId: string, filter: UserFilter, page: PageRequest): Promise<Page<User>> {
    return users.listUsers(this.#db, tenantId, filter, page);
  }

  updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null> {
    return users.updateUser(this.#db, tenantId, id, fields);
  }

  deleteUser(tenantId: string, id: string): Promise<boolean> {
    return users.deleteUser(this.#db, tenantId, id);
  }

  createFile(tenantId: string, file: NewFile, content: Buffer): Promise<StoredFile> {
    return files.createFile(this.#db, tenantId, file, content);
  }

  getFile(tenantId: string, id: string): Promise<StoredFile | null> {
    return files.getFile(this.#db, tenantId, id);
  }

  listFiles(tenantId: string, filter: FileFilter, page: PageRequest): Promise<Page<StoredFile>> {
    return files.listFiles(this.#db, tenantId, filter, page);
  }

  readFileContent(tenantId: string, id: string): Promise<Buffer | null> {
    return files.readFileContent(this.#db, tenantId, id);
  }

  deleteFile(tenantId: string, id: string): Promise<boolean> {
    return files.deleteFile(this.#db, tenantId, id);
  }

  // --- shards, sessions and messages

  async claimShards(owner: string, shards: readonly number[]): Promise<Map<number, number>> {
    for (const shard of shards) {
      if (!Number.isInteger(shard) || shard < 0 || shard >= SHARD_COUNT) {
        throw new RangeError(`There is no shard ${shard}`);
      }
    }
    // One statement, rows in shard order: concurrent claims lock rows in the same order, never deadlock.
    const unique = [...new Set(shards)].sort((a, b) => a - b);
    const { rows } = await this.#tx((c) =>
      c.query(
        `INSERT INTO shard_owner (shard, epoch, owner, updated_at)
           SELECT s, 1, $1, $2 FROM unnest($3::int[]) AS s ORDER BY s
         ON CONFLICT (shard) DO UPDATE
           SET epoch = shard_owner.epoch + 1, owner = excluded.owner, updated_at = excluded.updated_at
         RETURNING shard, epoch`,
        [owner, now(), unique],
      ),
    );
    return new Map(rows.map((r) => [r.shard as number, r.epoch as number]));
  }

  async createSession(tenantId: string, session: NewSession, fence: Fence): Promise<SessionRecord> {
    const at = now();
    await this.#tx(async (c) => {
      await insertSession(c, tenantId, session, fence, at);
    });
    const created = await this.getSession(tenantId, session.id);
    if (!created) throw new Error(`Session ${session.id} vanished after its insert`);
    return created;
  }

  async getSession(tenantId: string, id: string): Promise<SessionRecord | null> {
    const [row] = await this.#rows(
      `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
         WHERE s.tenant_id = $1 AND s.id = $2`,
      [tenantId, id],
    );
    return row ? toSession(row) : null;
  }

  async loadSession(id: string): Promise<{ session: SessionRecord; snapshot: string | null } | null> {
    const [row] = await this.#rows(
      `SELECT ${sessionColumns}, s.snapshot FROM sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id = $1`,
      [id],
    );
    return row ? { session: toSession(row), snapshot: (row.snapshot as string | null) ?? null } : null;
  }

  async listSessions(
    tenantId: string,
    filter: SessionFilter,
    page: PageRequest,
  ): Promise<Page<SessionRecord>> {
    const where = new Where().add((p) => `s.tenant_id = ${p}`, tenantId);
    if (filter.status !== undefined) where.add((p) => `s.status = ${p}`, filter.status);
    if (filter.agent_id !== undefined) where.add((p) => `s.agent_id = ${p}`, filter.agent_id);
    if (filter.user_id !== undefined) where.add((p) => `s.user_id = ${p}`, filter.user_id);
    if (filter.agent_ids !== undefined) {
      where.add((p) => `s.agent_id = ANY(${p}::text[])`, [...filter.agent_ids]);
    }
    const sql = `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
      ${where.paged('s.created_at DESC, s.row_order DESC', page)}`;
    return toPage((await this.#rows(sql, where.params)).map(toSession), page);
  }

  /** One transaction per write (no group commit): a stale write fails alone and changes nothing. */
  commitSession(write: SessionWrite): Promise<SessionWriteResult> {
    return this.#tx((c) => applySessionWrite(c, write));
  }

  async sessionsDueForExpiry(at: string, limit: number, shards?: readonly number[]): Promise<string[]> {
    const rows = await this.#rows(
      `SELECT id FROM sessions WHERE status = 'active' AND expires_at < $1
         AND ($3::int[] IS NULL OR shard = ANY($3::int[])) ORDER BY expires_at LIMIT $2`,
      [new Date(at).toISOString(), limit, shards ? [...shards] : null],
    );
    return rows.map((r) => r.id as string);
  }

  async getMessage(tenantId: string, sessionId: string, messageId: string): Promise<MessageRecord | null> {
    const [row] = await this.#rows(
      `SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE s.tenant_id = $1 AND m.session_id = $2 AND m.id = $3`,
      [tenantId, sessionId, messageId],
    );
    return row ? toMessage(row) : null;
  }

  async listMessages(
    tenantId: string,
    sessionId: string,
    page: PageRequest,
  ): Promise<Page<MessageRecord> | null> {
    const owned = await this.#rows('SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      sessionId,
    ]);
    if (owned.length === 0) return null;
    const rows = await this.#rows(
      'SELECT * FROM messages WHERE session_id = $1 ORDER BY seq LIMIT $2 OFFSET $3',
      [sessionId, page.limit + 1, page.offset],
    );
    return toPage(rows.map(toMessage), page);
  }

  async recentMessages(sessionId: string, limit: number): Promise<MessageRecord[]> {
    const rows = await this.#rows(
      `SELECT * FROM (SELECT * FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2) AS recent
         ORDER BY seq`,
      [sessionId, limit],
    );
    return rows.map(toMessage);
  }

  async turnMessages(sessionId: string, turnId: string): Promise<MessageRecord[]> {
    const rows = await this.#rows(
      'SELECT * FROM messages WHERE session_id = $1 AND turn_id = $2 ORDER BY seq',
      [sessionId, turnId],
    );
    return rows.map(toMessage);
  }

  async upsertFeedback(
    sessionId: string,
    feedback: Omit<Feedback, 'session_id' | 'submitted_at'>,
  ): Promise<Feedback> {
    const { rows } = await this.#tx((c) =>
      c.query(
        `INSERT INTO feedback (id, session_id, score, comment, metadata, submitted_at)
           VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (session_id) DO UPDATE SET score = excluded.score, comment = excluded.comment,
           metadata = excluded.metadata, submitted_at = excluded.submitted_at
         RETURNING *`,
        [feedback.id, sessionId, feedback.score, feedback.comment, json(feedback.metadata), now()],
      ),
    );
    return toFeedback(rows[0] as Row);
  }

  async getFeedback(sessionId: string): Promise<Feedback | null> {
    const [row] = await this.#rows('SELECT * FROM feedback WHERE session_id = $1', [sessionId]);
    return row ? toFeedback(row) : null;
  }

  async getIdempotencyRecord(sessionId: string, key: string): Promise<IdempotencyRecord | null> {
    const [row] = await this.#rows('SELECT * FROM idempotency_records WHERE session_id = $1 AND key = $2', [
      sessionId,
      key,
    ]);
    return row ? toIdempotency(row) : null;
  }

  async deleteExpiredIdempotencyRecords(at: string): Promise<number> {
    const result = await this.#tx((c) =>
      c.query('DELETE FROM idempotency_records WHERE expires_at <= $1', [at]),
    );
    return result.rowCount ?? 0;
  }
}
