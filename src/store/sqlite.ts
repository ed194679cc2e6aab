// The embedded Store: one SQLite file (Node's built-in node:sqlite) in WAL mode with full fsync, every write
// in a BEGIN IMMEDIATE transaction so that concurrent writers (the CLI, a second process) queue instead of
// failing.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { AppError } from '../errors.ts';
import { type Migration, sqliteMigrations } from './sqlite-migrations.ts';
import {
  type ApiKeyRecord,
  type ContentBlock,
  type Feedback,
  type Fence,
  type FileFilter,
  type IdempotencyRecord,
  type JsonObject,
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

type Row = Record<string, unknown>;

const now = () => new Date().toISOString();
const json = (value: unknown) => JSON.stringify(value ?? {});
const parseObject = (text: unknown): JsonObject => (typeof text === 'string' ? JSON.parse(text) : {});

const toTenant = (r: Row): Tenant => ({
  id: r.id as string,
  name: r.name as string,
  created_at: r.created_at as string,
});

const toUser = (r: Row): User => ({
  id: r.id as string,
  created_at: r.created_at as string,
  updated_at: r.updated_at as string,
  reference: (r.reference as string | null) ?? null,
  name: (r.name as string | null) ?? null,
  email: (r.email as string | null) ?? null,
  phone: (r.phone as string | null) ?? null,
  metadata: parseObject(r.metadata),
  info: parseObject(r.info),
});

const toFile = (r: Row): StoredFile => ({
  id: r.id as string,
  name: r.name as string,
  size: r.size as number,
  mime_type: r.mime_type as string,
  created_at: r.created_at as string,
  metadata: parseObject(r.metadata),
  session_id: (r.session_id as string | null) ?? null,
});

const toFeedback = (r: Row): Feedback => ({
  id: r.id as string,
  session_id: r.session_id as string,
  score: r.score as number,
  comment: (r.comment as string | null) ?? null,
  metadata: parseObject(r.metadata),
  submitted_at: r.submitted_at as string,
});

const toApiKey = (r: Row): ApiKeyRecord => ({
  id: r.id as string,
  tenant_id: r.tenant_id as string,
  prefix: r.prefix as string,
  agents: JSON.parse(r.agents as string),
  created_at: r.created_at as string,
  revoked_at: (r.revoked_at as string | null) ?? null,
});

const toSession = (r: Row): SessionRecord => ({
  id: r.id as string,
  tenant_id: r.tenant_id as string,
  agent_id: r.agent_id as string,
  user: r.user_id
    ? { id: r.user_id as string, reference: (r.user_reference as string | null) ?? null }
    : null,
  status: r.status as SessionRecord['status'],
  created_at: r.created_at as string,
  updated_at: r.updated_at as string,
  messages_count: r.messages_count as number,
  last_message_at: (r.last_message_at as string | null) ?? null,
  closed_at: (r.closed_at as string | null) ?? null,
  close_reason: (r.close_reason as string | null) ?? null,
  expires_at: (r.expires_at as string | null) ?? null,
  context: parseObject(r.context),
  metadata: parseObject(r.metadata),
  shard: r.shard as number,
});

const toMessage = (r: Row): MessageRecord => ({
  id: r.id as string,
  session_id: r.session_id as string,
  role: r.role as MessageRecord['role'],
  content: JSON.parse(r.content as string) as ContentBlock[],
  metadata: r.metadata === null ? null : parseObject(r.metadata),
  created_at: r.created_at as string,
  turn_id: (r.turn_id as string | null) ?? null,
});

const toIdempotency = (r: Row): IdempotencyRecord => ({
  session_id: r.session_id as string,
  key: r.key as string,
  fingerprint: r.fingerprint as string,
  turn_id: r.turn_id as string,
  status_code: (r.status_code as number | null) ?? null,
  response: r.response === null ? null : JSON.parse(r.response as string),
  created_at: r.created_at as string,
  expires_at: r.expires_at as string,
});

const sessionColumns = `s.id, s.tenant_id, s.agent_id, s.user_id, u.reference AS user_reference, s.status,
  s.created_at, s.updated_at, s.messages_count, s.last_message_at, s.closed_at, s.close_reason, s.expires_at,
  s.context, s.metadata, s.shard`;

/** Escapes LIKE wildcards so a user's `%` or `_` matches itself. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** SQLite's (extended) result code of an error thrown by node:sqlite; undefined for any other error. */
const sqliteCode = (err: unknown): number | undefined =>
  err instanceof Error && 'errcode' in err && typeof err.errcode === 'number' ? err.errcode : undefined;
const SQLITE_BUSY = 5;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

function isReferenceConflict(err: unknown): boolean {
  return sqliteCode(err) === SQLITE_CONSTRAINT_UNIQUE && (err as Error).message.includes('users.');
}

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

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly #db: DatabaseSync;
  readonly #migrations: readonly Migration[];

  constructor(file: string, migrations: readonly Migration[] = sqliteMigrations) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.#db = new DatabaseSync(file, { timeout: 5000 });
    whileBusy(() => this.#db.exec('PRAGMA journal_mode = WAL'), 5000);
    // FULL: a commit is on disk before we acknowledge it, even across a power loss.
    this.#db.exec('PRAGMA synchronous = FULL');
    this.#db.exec('PRAGMA foreign_keys = ON');
    this.#migrations = migrations;
  }

  readonly #statements = new Map<string, StatementSync>();
  readonly #pendingWrites: {
    write: SessionWrite;
    resolve(result: SessionWriteResult): void;
    reject(error: unknown): void;
  }[] = [];

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
    const row = this.#q('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null };
    return row.v ?? 0;
  }

  async ping(): Promise<void> {
    this.#q('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (!this.#db.isOpen) return;
    this.#flushSessionWrites();
    this.#db.close();
  }

  // --- tenants and keys

  async createTenant(id: string, name: string): Promise<Tenant> {
    const tenant = { id, name, created_at: now() };
    this.#write(() =>
      this.#q('INSERT INTO tenants (id, name, created_at) VALUES (@id, @name, @created_at)').run(tenant),
    );
    return tenant;
  }

  async getTenant(id: string): Promise<Tenant | null> {
    const row = this.#q('SELECT id, name, created_at FROM tenants WHERE id = ?').get(id);
    return row ? toTenant(row) : null;
  }

  async listTenants(): Promise<Tenant[]> {
    return this.#q('SELECT id, name, created_at FROM tenants ORDER BY created_at, id').all().map(toTenant);
  }

  async createApiKey(key: NewApiKey): Promise<ApiKeyRecord> {
    const created_at = now();
    this.#write(() =>
      this.#q(
        'INSERT INTO api_keys (id, tenant_id, hash, prefix, agents, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(key.id, key.tenant_id, key.hash, key.prefix, JSON.stringify(key.agents), created_at),
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
      ? 'SELECT * FROM api_keys WHERE hash = ?'
      : 'SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL';
    const row = this.#q(sql).get(hash) as Row | undefined;
    return row ? toApiKey(row) : null;
  }

  async listApiKeys(tenantId?: string): Promise<ApiKeyRecord[]> {
    const rows = (
      tenantId === undefined
        ? this.#q('SELECT * FROM api_keys ORDER BY created_at, id').all()
        : this.#q('SELECT * FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id').all(tenantId)
    ) as Row[];
    return rows.map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    const result = this.#write(() =>
      this.#q('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now(), id),
    );
    return Number(result.changes) === 1;
  }

  async countActiveApiKeys(): Promise<number> {
    return (this.#q('SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL').get() as { n: number }).n;
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
      this.#write(() =>
        this.#q(
          `INSERT INTO users (id, tenant_id, reference, name, email, phone, metadata, info, created_at, updated_at)
             VALUES (@id, @tenant_id, @reference, @name, @email, @phone, @metadata, @info, @created_at, @updated_at)`,
        ).run(row),
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
    const row = this.#q('SELECT * FROM users WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL').get(
      tenantId,
      id,
    ) as Row | undefined;
    return row ? toUser(row) : null;
  }

  async listUsers(tenantId: string, filter: UserFilter, page: PageRequest): Promise<Page<User>> {
    const where = ['tenant_id = @tenantId', 'deleted_at IS NULL'];
    if (filter.reference !== undefined) where.push('reference = @reference');
    if (filter.email !== undefined) where.push('email = @email COLLATE NOCASE');
    const rows = this.#q(
      `SELECT * FROM users WHERE ${where.join(' AND ')}
         ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
    ).all({
      tenantId,
      ...(filter.reference !== undefined ? { reference: filter.reference } : {}),
      ...(filter.email !== undefined ? { email: filter.email } : {}),
      limit: page.limit + 1,
      offset: page.offset,
    }) as Row[];
    return toPage(rows.map(toUser), page);
  }

  async updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null> {
    const sets: string[] = [];
    const params: Record<string, SQLInputValue> = { tenantId, id, updated_at: now() };
    for (const column of ['reference', 'name', 'email', 'phone'] as const) {
      if (fields[column] !== undefined) {
        sets.push(`${column} = @${column}`);
        params[column] = fields[column];
      }
    }
    for (const column of ['metadata', 'info'] as const) {
      if (fields[column] !== undefined) {
        sets.push(`${column} = @${column}`);
        params[column] = json(fields[column]);
      }
    }
    sets.push('updated_at = @updated_at');
    try {
      const row = this.#write(
        () =>
          this.#q(
            `UPDATE users SET ${sets.join(', ')}
               WHERE tenant_id = @tenantId AND id = @id AND deleted_at IS NULL RETURNING *`,
          ).get(params) as Row | undefined,
      );
      return row ? toUser(row) : null;
    } catch (err) {
      throw this.#referenceConflict(err, fields.reference);
    }
  }

  async deleteUser(tenantId: string, id: string): Promise<boolean> {
    const at = now();
    const result = this.#write(() =>
      this.#q(
        'UPDATE users SET deleted_at = ?, updated_at = ? WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL',
      ).run(at, at, tenantId, id),
    );
    return Number(result.changes) === 1;
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
    this.#write(() => {
      this.#q(
        `INSERT INTO files (id, tenant_id, session_id, name, name_lower, size, mime_type, metadata, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        stored.id,
        tenantId,
        stored.session_id,
        stored.name,
        stored.name.toLowerCase(),
        stored.size,
        stored.mime_type,
        json(stored.metadata),
        stored.created_at,
      );
      this.#q('INSERT INTO file_blobs (file_id, data) VALUES (?, ?)').run(stored.id, content);
    });
    return stored;
  }

  async getFile(tenantId: string, id: string): Promise<StoredFile | null> {
    const row = this.#q('SELECT * FROM files WHERE tenant_id = ? AND id = ?').get(tenantId, id) as
      | Row
      | undefined;
    return row ? toFile(row) : null;
  }

  async listFiles(tenantId: string, filter: FileFilter, page: PageRequest): Promise<Page<StoredFile>> {
    const where = ['tenant_id = @tenantId'];
    const params: Record<string, SQLInputValue> = { tenantId, limit: page.limit + 1, offset: page.offset };
    if (filter.name !== undefined) {
      where.push("name_lower LIKE @name ESCAPE '\\'");
      params.name = likePrefix(filter.name.toLowerCase());
    }
    if (filter.session_id !== undefined) {
      where.push('session_id = @session_id');
      params.session_id = filter.session_id;
    }
    if (filter.mime_type !== undefined) {
      where.push('mime_type = @mime_type');
      params.mime_type = filter.mime_type;
    }
    if (filter.created_after !== undefined) {
      where.push('created_at > @created_after');
      params.created_after = new Date(filter.created_after).toISOString();
    }
    if (filter.created_before !== undefined) {
      where.push('created_at < @created_before');
      params.created_before = new Date(filter.created_before).toISOString();
    }
    const rows = this.#q(
      `SELECT * FROM files WHERE ${where.join(' AND ')}
         ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
    ).all(params) as Row[];
    return toPage(rows.map(toFile), page);
  }

  async readFileContent(tenantId: string, id: string): Promise<Buffer | null> {
    const row = this.#q(
      'SELECT b.data FROM file_blobs b JOIN files f ON f.id = b.file_id WHERE f.tenant_id = ? AND f.id = ?',
    ).get(tenantId, id) as { data: Uint8Array } | undefined;
    return row ? Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength) : null;
  }

  async deleteFile(tenantId: string, id: string): Promise<boolean> {
    return this.#write(() => {
      const found = this.#q('SELECT 1 FROM files WHERE tenant_id = ? AND id = ?').get(tenantId, id);
      if (!found) return false;
      this.#q('DELETE FROM file_blobs WHERE file_id = ?').run(id);
      this.#q('DELETE FROM files WHERE id = ?').run(id);
      return true;
    });
  }

  // --- shards, sessions and messages

  async claimShards(owner: string, shards: readonly number[]): Promise<Map<number, number>> {
    const at = now();
    return this.#write(() => {
      const claimed = new Map<number, number>();
      const claim = this.#q(
        'UPDATE shard_owner SET epoch = epoch + 1, owner = ?, updated_at = ? WHERE shard = ? RETURNING epoch',
      );
      for (const shard of shards) {
        const row = claim.get(owner, at, shard) as { epoch: number } | undefined;
        if (!row) throw new RangeError(`There is no shard ${shard}`);
        claimed.set(shard, row.epoch);
      }
      return claimed;
    });
  }

  /** Throws StaleEpochError unless the shard's epoch is still the writer's; call inside #write. */
  #checkFence(fence: Fence): void {
    const row = this.#q('SELECT epoch FROM shard_owner WHERE shard = ?').get(fence.shard) as
      | { epoch: number }
      | undefined;
    if (row?.epoch !== fence.epoch) throw new StaleEpochError(fence.shard);
  }

  async createSession(tenantId: string, session: NewSession, fence: Fence): Promise<SessionRecord> {
    const at = now();
    this.#write(() => {
      this.#checkFence(fence);
      if (session.shard !== fence.shard) throw new StaleEpochError(session.shard);
      if (session.user_id !== null) {
        const user = this.#q('SELECT 1 FROM users WHERE id = ? AND tenant_id = ?').get(
          session.user_id,
          tenantId,
        );
        if (!user) throw new Error(`User ${session.user_id} is not a user of tenant ${tenantId}`);
      }
      this.#q(
        `INSERT INTO sessions (id, tenant_id, agent_id, user_id, shard, status, context, metadata, expires_at,
           snapshot, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?)`,
      ).run(
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
        at,
      );
    });
    const created = await this.getSession(tenantId, session.id);
    if (!created) throw new Error(`Session ${session.id} vanished after its insert`);
    return created;
  }

  async getSession(tenantId: string, id: string): Promise<SessionRecord | null> {
    const row = this.#q(
      `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
         WHERE s.tenant_id = ? AND s.id = ?`,
    ).get(tenantId, id) as Row | undefined;
    return row ? toSession(row) : null;
  }

  async loadSession(id: string): Promise<{ session: SessionRecord; snapshot: string | null } | null> {
    const row = this.#q(
      `SELECT ${sessionColumns}, s.snapshot FROM sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id = ?`,
    ).get(id) as Row | undefined;
    return row ? { session: toSession(row), snapshot: (row.snapshot as string | null) ?? null } : null;
  }

  async listSessions(
    tenantId: string,
    filter: SessionFilter,
    page: PageRequest,
  ): Promise<Page<SessionRecord>> {
    const where = ['s.tenant_id = @tenantId'];
    const params: Record<string, SQLInputValue> = { tenantId, limit: page.limit + 1, offset: page.offset };
    if (filter.status !== undefined) {
      where.push('s.status = @status');
      params.status = filter.status;
    }
    if (filter.agent_id !== undefined) {
      where.push('s.agent_id = @agent_id');
      params.agent_id = filter.agent_id;
    }
    if (filter.user_id !== undefined) {
      where.push('s.user_id = @user_id');
      params.user_id = filter.user_id;
    }
    if (filter.agent_ids !== undefined) {
      // One JSON parameter instead of a variable IN list keeps the statement cacheable.
      where.push('s.agent_id IN (SELECT value FROM json_each(@agent_ids))');
      params.agent_ids = JSON.stringify(filter.agent_ids);
    }
    const rows = this.#q(
      `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
         WHERE ${where.join(' AND ')} ORDER BY s.created_at DESC, s.rowid DESC LIMIT @limit OFFSET @offset`,
    ).all(params) as Row[];
    return toPage(rows.map(toSession), page);
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
          outcomes.push({ value: this.#applySessionWrite(batch[0].write) });
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
    this.#write(() => this.#applySessionWrite(write));

  #applySessionWrite(write: SessionWrite): SessionWriteResult {
    const at = write.at ?? now();
    // The fence and the session's own shard in one lookup: a fence of another shard proves nothing.
    const owner = this.#q(
      'SELECT s.shard, o.epoch FROM sessions s LEFT JOIN shard_owner o ON o.shard = s.shard WHERE s.id = ?',
    ).get(write.session_id) as { shard: number; epoch: number | null } | undefined;
    if (!owner) throw new Error(`Session ${write.session_id} does not exist`);
    if (owner.shard !== write.fence.shard || owner.epoch !== write.fence.epoch) {
      throw new StaleEpochError(owner.shard);
    }
    const added = write.messages ?? [];
    const p = write.patch;
    const row = this.#q(
      `UPDATE sessions SET
         status = coalesce(@status, status),
         closed_at = coalesce(@closed_at, closed_at),
         close_reason = CASE WHEN @set_reason THEN @close_reason ELSE close_reason END,
         expires_at = coalesce(@expires_at, expires_at),
         last_message_at = coalesce(@last_message_at, last_message_at),
         messages_count = messages_count + @added,
         snapshot = @snapshot, version = version + 1, updated_at = @at
       WHERE id = @id RETURNING messages_count`,
    ).get({
      id: write.session_id,
      status: p.status ?? null,
      closed_at: p.closed_at ?? null,
      set_reason: p.close_reason === undefined ? 0 : 1,
      close_reason: p.close_reason ?? null,
      expires_at: p.expires_at === undefined ? null : new Date(p.expires_at).toISOString(),
      last_message_at: p.last_message_at ?? null,
      added: added.length,
      snapshot: p.snapshot,
      at,
    }) as { messages_count: number };
    // Messages are only ever appended here, so the count is the last seq: no max(seq) lookup.
    let seq = row.messages_count - added.length;
    const messages: MessageRecord[] = [];
    if (added.length > 0) {
      const insert = this.#q(
        `INSERT INTO messages (id, session_id, seq, role, content, metadata, turn_id, created_at, epoch)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const m of added) {
        seq += 1;
        const metadata = m.metadata === null ? null : JSON.stringify(m.metadata);
        insert.run(
          m.id,
          write.session_id,
          seq,
          m.role,
          JSON.stringify(m.content),
          metadata,
          m.turn_id,
          at,
          write.fence.epoch,
        );
        messages.push({ ...m, session_id: write.session_id, created_at: at });
      }
    }
    if (write.idempotency) {
      const k = write.idempotency;
      this.#q(
        `INSERT OR REPLACE INTO idempotency_records
           (session_id, key, fingerprint, turn_id, user_message_id, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(write.session_id, k.key, k.fingerprint, k.turn_id, k.user_message_id, at, k.expires_at);
    }
    if (write.idempotencyResponse) {
      const r = write.idempotencyResponse;
      this.#q(
        'UPDATE idempotency_records SET status_code = ?, response = ? WHERE session_id = ? AND key = ?',
      ).run(r.status_code, JSON.stringify(r.response), write.session_id, r.key);
    }
    return { messages, messages_count: row.messages_count, updated_at: at };
  }

  async sessionsDueForExpiry(at: string, limit: number, shards?: readonly number[]): Promise<string[]> {
    const rows = (
      shards
        ? this.#q(
            `SELECT id FROM sessions WHERE status = 'active' AND expires_at < ?
               AND shard IN (SELECT value FROM json_each(?)) ORDER BY expires_at LIMIT ?`,
          ).all(new Date(at).toISOString(), JSON.stringify(shards), limit)
        : this.#q(
            `SELECT id FROM sessions WHERE status = 'active' AND expires_at < ? ORDER BY expires_at LIMIT ?`,
          ).all(new Date(at).toISOString(), limit)
    ) as { id: string }[];
    return rows.map((r) => r.id);
  }

  async getMessage(tenantId: string, sessionId: string, messageId: string): Promise<MessageRecord | null> {
    const row = this.#q(
      `SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE s.tenant_id = ? AND m.session_id = ? AND m.id = ?`,
    ).get(tenantId, sessionId, messageId) as Row | undefined;
    return row ? toMessage(row) : null;
  }

  async listMessages(
    tenantId: string,
    sessionId: string,
    page: PageRequest,
  ): Promise<Page<MessageRecord> | null> {
    const owned = this.#q('SELECT 1 FROM sessions WHERE tenant_id = ? AND id = ?').get(tenantId, sessionId);
    if (!owned) return null;
    const rows = this.#q('SELECT * FROM messages WHERE session_id = ? ORDER BY seq LIMIT ? OFFSET ?').all(
      sessionId,
      page.limit + 1,
      page.offset,
    ) as Row[];
    return toPage(rows.map(toMessage), page);
  }

  async recentMessages(sessionId: string, limit: number): Promise<MessageRecord[]> {
    const rows = this.#q(
      'SELECT * FROM (SELECT * FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq',
    ).all(sessionId, limit) as Row[];
    return rows.map(toMessage);
  }

  async turnMessages(sessionId: string, turnId: string): Promise<MessageRecord[]> {
    const rows = this.#q('SELECT * FROM messages WHERE session_id = ? AND turn_id = ? ORDER BY seq').all(
      sessionId,
      turnId,
    ) as Row[];
    return rows.map(toMessage);
  }

  async upsertFeedback(
    sessionId: string,
    feedback: Omit<Feedback, 'session_id' | 'submitted_at'>,
  ): Promise<Feedback> {
    const row = this.#write(
      () =>
        this.#q(
          `INSERT INTO feedback (id, session_id, score, comment, metadata, submitted_at)
             VALUES (@id, @session_id, @score, @comment, @metadata, @submitted_at)
           ON CONFLICT (session_id) DO UPDATE SET score = excluded.score, comment = excluded.comment,
             metadata = excluded.metadata, submitted_at = excluded.submitted_at
           RETURNING *`,
        ).get({
          id: feedback.id,
          score: feedback.score,
          comment: feedback.comment ?? null,
          session_id: sessionId,
          metadata: json(feedback.metadata),
          submitted_at: now(),
        }) as Row,
    );
    return toFeedback(row);
  }

  async getFeedback(sessionId: string): Promise<Feedback | null> {
    const row = this.#q('SELECT * FROM feedback WHERE session_id = ?').get(sessionId) as Row | undefined;
    return row ? toFeedback(row) : null;
  }

  async getIdempotencyRecord(sessionId: string, key: string): Promise<IdempotencyRecord | null> {
    const row = this.#q('SELECT * FROM idempotency_records WHERE session_id = ? AND key = ?').get(
      sessionId,
      key,
    ) as Row | undefined;
    return row ? toIdempotency(row) : null;
  }

  async deleteExpiredIdempotencyRecords(at: string): Promise<number> {
    return Number(
      this.#write(() => this.#q('DELETE FROM idempotency_records WHERE expires_at <= ?').run(at)).changes,
    );
  }
}
