// Row mapping for PostgresStore: turns rows of the PostgreSQL schema (postgres-migrations.ts) into the
// records of store.ts, exactly as SqliteStore shapes them; plus the SQL helpers its modules share.
import type pg from 'pg';
import type {
  ApiKeyRecord,
  ContentBlock,
  Feedback,
  IdempotencyRecord,
  JsonObject,
  MessageRecord,
  SessionRecord,
  StoredFile,
  User,
} from './store.ts';

export type Row = Record<string, unknown>;

export const now = () => new Date().toISOString();
export const json = (value: unknown) => JSON.stringify(value ?? {});
const parseObject = (text: unknown): JsonObject => (typeof text === 'string' ? JSON.parse(text) : {});

export const toUser = (r: Row): User => ({
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

export const toFile = (r: Row): StoredFile => ({
  id: r.id as string,
  name: r.name as string,
  // BIGINT arrives as a string (pg does not guess at precision); file sizes are far below 2^53.
  size: Number(r.size),
  mime_type: r.mime_type as string,
  created_at: r.created_at as string,
  metadata: parseObject(r.metadata),
  session_id: (r.session_id as string | null) ?? null,
});

export const toFeedback = (r: Row): Feedback => ({
  id: r.id as string,
  session_id: r.session_id as string,
  score: r.score as number,
  comment: (r.comment as string | null) ?? null,
  metadata: parseObject(r.metadata),
  submitted_at: r.submitted_at as string,
});

export const toApiKey = (r: Row): ApiKeyRecord => ({
  id: r.id as string,
  tenant_id: r.tenant_id as string,
  prefix: r.prefix as string,
  agents: JSON.parse(r.agents as string),
  created_at: r.created_at as string,
  revoked_at: (r.revoked_at as string | null) ?? null,
});

export const toSession = (r: Row): SessionRecord => ({
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

export const toMessage = (r: Row): MessageRecord => ({
  id: r.id as string,
  session_id: r.session_id as string,
  role: r.role as MessageRecord['role'],
  content: JSON.parse(r.content as string) as ContentBlock[],
  metadata: r.metadata === null ? null : parseObject(r.metadata),
  created_at: r.created_at as string,
  turn_id: (r.turn_id as string | null) ?? null,
});

export const toIdempotency = (r: Row): IdempotencyRecord => ({
  session_id: r.session_id as string,
  key: r.key as string,
  fingerprint: r.fingerprint as string,
  turn_id: r.turn_id as string,
  status_code: (r.status_code as number | null) ?? null,
  response: r.response === null ? null : JSON.parse(r.response as string),
  created_at: r.created_at as string,
  expires_at: r.expires_at as string,
});

export const sessionColumns = `s.id, s.tenant_id, s.agent_id, s.user_id, u.reference AS user_reference, s.status,
  s.created_at, s.updated_at, s.messages_count, s.last_message_at, s.closed_at, s.close_reason, s.expires_at,
  s.context, s.metadata, s.shard`;

/** Escapes LIKE wildcards so a user's `%` or `_` matches itself (used with ESCAPE '\'). */
export const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** SQLite's NOCASE: folds ASCII letters only, whatever the database's locale (the index uses the same). */
export const asciiFold = (expr: string) =>
  `translate(${expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;

/** A WHERE clause with positional parameters ($1, $2, …), built condition by condition. */
export class Where {
  readonly params: unknown[] = [];
  readonly #conditions: string[] = [];

  /** Adds `condition`, given the placeholder of `value`. */
  add(condition: (placeholder: string) => string, value: unknown): this {
    this.params.push(value);
    this.#conditions.push(condition(`$${this.params.length}`));
    return this;
  }

  /** `WHERE …` with `orderBy`, fetching one row more than the page (see toPage). */
  paged(orderBy: string, page: { limit: number; offset: number }): string {
    this.params.push(page.limit + 1, page.offset);
    const n = this.params.length;
    return `WHERE ${this.#conditions.join(' AND ')} ORDER BY ${orderBy} LIMIT $${n - 1} OFFSET $${n}`;
  }
}

export type Queryable = Pick<pg.PoolClient, 'query'>;

/** What the per-resource modules need of PostgresStore: a read on the pool, a write in a transaction. */
export interface Db {
  rows(sql: string, params?: unknown[]): Promise<Row[]>;
  tx<T>(fn: (c: Queryable) => Promise<T>): Promise<T>;
}
