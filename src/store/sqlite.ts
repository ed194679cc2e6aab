// The embedded Store: one SQLite file (better-sqlite3) in WAL mode with full fsync, every write in a
// BEGIN IMMEDIATE transaction so that concurrent writers (the CLI, a second process) queue instead of failing.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '../errors.ts';
import { type Migration, sqliteMigrations } from './sqlite-migrations.ts';
import {
  type ApiKeyRecord,
  type FileFilter,
  type JsonObject,
  type NewApiKey,
  type NewFile,
  type Page,
  type PageRequest,
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

const toApiKey = (r: Row): ApiKeyRecord => ({
  id: r.id as string,
  tenant_id: r.tenant_id as string,
  prefix: r.prefix as string,
  agents: JSON.parse(r.agents as string),
  created_at: r.created_at as string,
  revoked_at: (r.revoked_at as string | null) ?? null,
});

/** Escapes LIKE wildcards so a user's `%` or `_` matches itself. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function isReferenceConflict(err: unknown): boolean {
  return (
    err instanceof Database.SqliteError &&
    err.code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    err.message.includes('users.')
  );
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
      const busy = err instanceof Database.SqliteError && err.code.startsWith('SQLITE_BUSY');
      if (!busy || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly #db: Database.Database;
  readonly #migrations: readonly Migration[];

  constructor(file: string, migrations: readonly Migration[] = sqliteMigrations) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.#db = new Database(file);
    this.#db.pragma('busy_timeout = 5000');
    whileBusy(() => this.#db.pragma('journal_mode = WAL'), 5000);
    // FULL: a commit is on disk before we acknowledge it, even across a power loss.
    this.#db.pragma('synchronous = FULL');
    this.#db.pragma('foreign_keys = ON');
    this.#migrations = migrations;
  }

  readonly #statements = new Map<string, Database.Statement>();

  /** A prepared statement, prepared once per SQL text. */
  #q(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs `fn` in a BEGIN IMMEDIATE transaction. */
  #write<T>(fn: () => T): T {
    return this.#db.transaction(fn).immediate();
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
    if (this.#db.open) this.#db.close();
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
    return (this.#q('SELECT id, name, created_at FROM tenants WHERE id = ?').get(id) as Tenant) ?? null;
  }

  async listTenants(): Promise<Tenant[]> {
    return this.#q('SELECT id, name, created_at FROM tenants ORDER BY created_at, id').all() as Tenant[];
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
    return result.changes === 1;
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
    ).all({ tenantId, ...filter, limit: page.limit + 1, offset: page.offset }) as Row[];
    return toPage(rows.map(toUser), page);
  }

  async updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null> {
    const sets: string[] = [];
    const params: Record<string, unknown> = { tenantId, id, updated_at: now() };
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
    return result.changes === 1;
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
    const params: Record<string, unknown> = { tenantId, limit: page.limit + 1, offset: page.offset };
    if (filter.name !== undefined) {
      where.push("name_lower LIKE @name ESCAPE '\\'");
      params.name = likePrefix(filter.name.toLowerCase());
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
    ).get(tenantId, id) as { data: Buffer } | undefined;
    return row?.data ?? null;
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
}
