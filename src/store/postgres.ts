// The distributed Store: PostgreSQL through a pg.Pool, for several processes sharing one database.
// Same semantics and records as SqliteStore; every write is one transaction, session writes fenced.
import pg from 'pg';
import { SHARD_COUNT } from '../cluster/shard.ts';
import { AppError } from '../errors.ts';
import {
  asciiFold,
  json,
  likePrefix,
  now,
  type Row,
  sessionColumns,
  toApiKey,
  toFeedback,
  toFile,
  toIdempotency,
  toMessage,
  toSession,
  toUser,
} from './postgres-rows.ts';
import { postgresMigrations } from './postgres-migrations.ts';
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
  StaleEpochError,
  type Store,
  type StoredFile,
  type Tenant,
  toPage,
  type User,
  type UserFields,
  type UserFilter,
} from './store.ts';

type Queryable = Pick<pg.PoolClient, 'query'>;

/** The advisory lock under which migrations run, so that processes starting together apply each once. */
const MIGRATION_LOCK = 0x7061726c; // 'parl'

const isReferenceConflict = (err: unknown) =>
  err instanceof pg.DatabaseError && err.code === '23505' && err.constraint === 'users_live_reference';

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
      c.query('INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)', [id, name, tenant.created_at]),
    );
    return tenant;
  }

  async getTenant(id: string): Promise<Tenant | null> {
    const [row] = await this.#rows('SELECT id, name, created_at FROM tenants WHERE id = $1', [id]);
    return (row as Tenant | undefined) ?? null;
  }

  async listTenants(): Promise<Tenant[]> {
    return (await this.#rows('SELECT id, name, created_at FROM tenants ORDER BY created_at, id')) as Tenant[];
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

  // --- users

  async createUser(tenantId: string, id: string, fields: UserFields): Promise<User> {
    const at = now();
    const row = {
      id,
      tenant_id: tenantId,
      reference: fields.reference ?? null,
      name: fields.name ?? null,
      email: fields.email ?? null,
      phone: fields.phone ?? null,
      metadata: json(fields.metadata),
      info: json(fields.info),
      created_at: at,
      updated_at: at,
    };
    try {
      await this.#tx((c) =>
        c.query(
          `INSERT INTO users (id, tenant_id, reference, name, email, phone, metadata, info, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          Object.values(row),
        ),
      );
    } catch (err) {
      throw this.#referenceConflict(err, fields.reference);
    }
    return toUser(row);
  }

  #referenceConflict(err: unknown, reference: string | null | undefined): unknown {
    if (!isReferenceConflict(err)) return err;
    return new AppError('user_reference_conflict', undefined, { context: { reference } });
  }

  async getUser(tenantId: string, id: string): Promise<User | null> {
    const [row] = await this.#rows(
      'SELECT * FROM users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL',
      [tenantId, id],
    );
    return row ? toUser(row) : null;
  }

  async listUsers(tenantId: string, filter: UserFilter, page: PageRequest): Promise<Page<User>> {
    const params: unknown[] = [tenantId];
    const where = ['tenant_id = $1', 'deleted_at IS NULL'];
    if (filter.reference !== undefined) {
      params.push(filter.reference);
      where.push(`reference = $${params.length}`);
    }
    if (filter.email !== undefined) {
      params.push(filter.email);
      where.push(`${asciiFold('email')} = ${asciiFold(`$${params.length}::text`)}`);
    }
    params.push(page.limit + 1, page.offset);
    const rows = await this.#rows(
      `SELECT * FROM users WHERE ${where.join(' AND ')}
         ORDER BY created_at DESC, row_order DESC LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return toPage(rows.map(toUser), page);
  }

  async updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null> {
    const params: unknown[] = [tenantId, id, now()];
    const sets = ['updated_at = $3'];
    for (const column of ['reference', 'name', 'email', 'phone', 'metadata', 'info'] as const) {
      const value = fields[column];
      if (value === undefined) continue;
      params.push(column === 'metadata' || column === 'info' ? json(value) : value);
      sets.push(`${column} = $${params.length}`);
    }
    try {
      const { rows } = await this.#tx((c) =>
        c.query(
          `UPDATE users SET ${sets.join(', ')}
             WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
          params,
        ),
      );
      return rows[0] ? toUser(rows[0]) : null;
    } catch (err) {
      throw this.#referenceConflict(err, fields.reference);
    }
  }

  async deleteUser(tenantId: string, id: string): Promise<boolean> {
    const at = now();
    const result = await this.#tx((c) =>
      c.query(
        'UPDATE users SET deleted_at = $1, updated_at = $1 WHERE tenant_id = $2 AND id = $3 AND deleted_at IS NULL',
        [at, tenantId, id],
      ),
    );
    return result.rowCount === 1;
  }

  // --- files

  async createFile(tenantId: string, file: NewFile, content: Buffer): Promise<StoredFile> {
    const stored: StoredFile = {
      id: file.id,
      name: file.name,
      size: content.length,
      mime_type: file.mime_type,
      created_at: now(),
      metadata: file.metadata,
      session_id: file.session_id,
    };
    await this.#tx(async (c) => {
      await c.query(
        `INSERT INTO files (id, tenant_id, session_id, name, name_lower, size, mime_type, metadata, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          stored.id,
          tenantId,
          stored.session_id,
          stored.name,
          // Folded here, by the same toLowerCase as the filter's prefix: both sides fold alike.
          stored.name.toLowerCase(),
          stored.size,
          stored.mime_type,
          json(stored.metadata),
          stored.created_at,
        ],
      );
      await c.query('INSERT INTO file_blobs (file_id, data) VALUES ($1, $2)', [stored.id, content]);
    });
    return stored;
  }

  async getFile(tenantId: string, id: string): Promise<StoredFile | null> {
    const [row] = await this.#rows('SELECT * FROM files WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
    return row ? toFile(row) : null;
  }

  async listFiles(tenantId: string, filter: FileFilter, page: PageRequest): Promise<Page<StoredFile>> {
    const params: unknown[] = [tenantId];
    const where = ['tenant_id = $1'];
    const add = (condition: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(condition(`$${params.length}`));
    };
    if (filter.name !== undefined) {
      add((p) => `name_lower LIKE ${p} ESCAPE '\\'`, likePrefix(filter.name.toLowerCase()));
    }
    if (filter.session_id !== undefined) add((p) => `session_id = ${p}`, filter.session_id);
    if (filter.mime_type !== undefined) add((p) => `mime_type = ${p}`, filter.mime_type);
    if (filter.created_after !== undefined) {
      add((p) => `created_at > ${p}`, new Date(filter.created_after).toISOString());
    }
    if (filter.created_before !== undefined) {
      add((p) => `created_at < ${p}`, new Date(filter.created_before).toISOString());
    }
    params.push(page.limit + 1, page.offset);
    const rows = await this.#rows(
      `SELECT * FROM files WHERE ${where.join(' AND ')}
         ORDER BY created_at DESC, row_order DESC LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return toPage(rows.map(toFile), page);
  }

  async readFileContent(tenantId: string, id: string): Promise<Buffer | null> {
    const [row] = await this.#rows(
      'SELECT b.data FROM file_blobs b JOIN files f ON f.id = b.file_id WHERE f.tenant_id = $1 AND f.id = $2',
      [tenantId, id],
    );
    return (row?.data as Buffer | undefined) ?? null;
  }

  async deleteFile(tenantId: string, id: string): Promise<boolean> {
    return this.#tx(async (c) => {
      const found = await c.query('SELECT 1 FROM files WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [
        tenantId,
        id,
      ]);
      if (found.rowCount === 0) return false;
      await c.query('DELETE FROM file_blobs WHERE file_id = $1', [id]);
      await c.query('DELETE FROM files WHERE id = $1', [id]);
      return true;
    });
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

  /**
   * Throws StaleEpochError unless the shard's epoch is still the fence's. The row stays share-locked until
   * commit, so a claim of the shard waits for this write and the write can never land after a newer claim.
   */
  async #checkFence(c: Queryable, fence: Fence): Promise<void> {
    const { rows } = await c.query('SELECT epoch FROM shard_owner WHERE shard = $1 FOR SHARE', [fence.shard]);
    if (rows[0]?.epoch !== fence.epoch) throw new StaleEpochError(fence.shard);
  }

  async createSession(tenantId: string, session: NewSession, fence: Fence): Promise<SessionRecord> {
    const at = now();
    await this.#tx(async (c) => {
      await this.#checkFence(c, fence);
      if (session.shard !== fence.shard) throw new StaleEpochError(session.shard);
      if (session.user_id !== null) {
        const user = await c.query('SELECT 1 FROM users WHERE id = $1 AND tenant_id = $2', [
          session.user_id,
          tenantId,
        ]);
        if (user.rowCount === 0) throw new Error(`User ${session.user_id} is not a user of tenant ${tenantId}`);
      }
      await c.query(
        `INSERT INTO sessions (id, tenant_id, agent_id, user_id, shard, status, context, metadata, expires_at,
           snapshot, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $9, $10, $10)`,
        [
          session.id,
          tenantId,
          session.agent_id,
          session.user_id,
          session.shard,
          json(session.context),
          json(session.metadata),
          new Date(session.expires_at).toISOString(),
          session.snapshot,
          at,
        ],
      );
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
    const params: unknown[] = [tenantId];
    const where = ['s.tenant_id = $1'];
    const add = (condition: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(condition(`$${params.length}`));
    };
    if (filter.status !== undefined) add((p) => `s.status = ${p}`, filter.status);
    if (filter.agent_id !== undefined) add((p) => `s.agent_id = ${p}`, filter.agent_id);
    if (filter.user_id !== undefined) add((p) => `s.user_id = ${p}`, filter.user_id);
    if (filter.agent_ids !== undefined) add((p) => `s.agent_id = ANY(${p}::text[])`, [...filter.agent_ids]);
    params.push(page.limit + 1, page.offset);
    const rows = await this.#rows(
      `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
         WHERE ${where.join(' AND ')} ORDER BY s.created_at DESC, s.row_order DESC
         LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return toPage(rows.map(toSession), page);
  }

  /** One transaction per write (no group commit): a stale write fails alone and changes nothing. */
  commitSession(write: SessionWrite): Promise<SessionWriteResult> {
    return this.#tx((c) => this.#applySessionWrite(c, write));
  }

  async #applySessionWrite(c: Queryable, write: SessionWrite): Promise<SessionWriteResult> {
    const at = write.at ?? now();
    const session = await c.query('SELECT shard FROM sessions WHERE id = $1', [write.session_id]);
    const shard = session.rows[0]?.shard as number | undefined;
    if (shard === undefined) throw new Error(`Session ${write.session_id} does not exist`);
    // A fence of another shard proves nothing about this session's shard.
    if (shard !== write.fence.shard) throw new StaleEpochError(shard);
    await this.#checkFence(c, write.fence);
    const added = write.messages ?? [];
    const p = write.patch;
    const { rows } = await c.query(
      `UPDATE sessions SET
         status = coalesce($2::text, status),
         closed_at = coalesce($3::text, closed_at),
         close_reason = CASE WHEN $4::boolean THEN $5::text ELSE close_reason END,
         expires_at = coalesce($6::text, expires_at),
         last_message_at = coalesce($7::text, last_message_at),
         messages_count = messages_count + $8::int,
         snapshot = $9, version = version + 1, updated_at = $10
       WHERE id = $1 RETURNING messages_count`,
      [
        write.session_id,
        p.status ?? null,
        p.closed_at ?? null,
        p.close_reason !== undefined,
        p.close_reason ?? null,
        p.expires_at === undefined ? null : new Date(p.expires_at).toISOString(),
        p.last_message_at ?? null,
        added.length,
        p.snapshot,
        at,
      ],
    );
    const messagesCount = rows[0]?.messages_count as number;
    // Messages are only ever appended here, so the count is the last seq: no max(seq) lookup.
    let seq = messagesCount - added.length;
    const messages: MessageRecord[] = [];
    for (const m of added) {
      seq += 1;
      const metadata = m.metadata === null ? null : JSON.stringify(m.metadata);
      await c.query(
        `INSERT INTO messages (id, session_id, seq, role, content, metadata, turn_id, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [m.id, write.session_id, seq, m.role, JSON.stringify(m.content), metadata, m.turn_id, at],
      );
      messages.push({ ...m, session_id: write.session_id, created_at: at });
    }
    if (write.idempotency) {
      const k = write.idempotency;
      // Replaces the whole record, as SQLite's INSERT OR REPLACE does: a new use has no answer yet.
      await c.query(
        `INSERT INTO idempotency_records
           (session_id, key, fingerprint, turn_id, user_message_id, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (session_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
           turn_id = excluded.turn_id, user_message_id = excluded.user_message_id, status_code = NULL,
           response = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
        [write.session_id, k.key, k.fingerprint, k.turn_id, k.user_message_id, at, k.expires_at],
      );
    }
    if (write.idempotencyResponse) {
      const r = write.idempotencyResponse;
      await c.query(
        'UPDATE idempotency_records SET status_code = $1, response = $2 WHERE session_id = $3 AND key = $4',
        [r.status_code, JSON.stringify(r.response), write.session_id, r.key],
      );
    }
    return { messages, messages_count: messagesCount, updated_at: at };
  }

  async sessionsDueForExpiry(at: string, limit: number): Promise<string[]> {
    const rows = await this.#rows(
      `SELECT id FROM sessions WHERE status = 'active' AND expires_at < $1 ORDER BY expires_at LIMIT $2`,
      [new Date(at).toISOString(), limit],
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
