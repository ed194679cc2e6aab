// The SQL both stores share: every statement built from filters, a patch or a table's columns is written
// once here, for either dialect; fixed one-line lookups stay in each store's modules, in its own dialect.
// Where the dialects differ inside a shared statement, the two Dialect objects below say how.
import { feedbackRow, idempotencyRow, toolCallRow, userChanges } from './new-rows.ts';
import type { SqlValue } from './rows.ts';
import type { Feedback, FileFilter, PageRequest, SessionWrite, UserFields, UserFilter } from './store.ts';

export interface Dialect {
  /** The placeholder of the n-th parameter, counting from 1. */
  placeholder(n: number): string;
  /** Orders rows created in the same millisecond: SQLite's rowid, PostgreSQL's identity column. */
  rowOrder: string;
  /** `column` is an element of the JSON array (text) held by the parameter `param`. */
  inJsonArray(column: string, param: string, type: 'text' | 'int'): string;
  /** `column` equals `param` ignoring the case of ASCII letters only, as SQLite's NOCASE does. */
  equalsIgnoringCase(column: string, param: string): string;
}

export const sqliteDialect: Dialect = {
  placeholder: () => '?',
  rowOrder: 'rowid',
  inJsonArray: (column, param) => `${column} IN (SELECT value FROM json_each(${param}))`,
  equalsIgnoringCase: (column, param) => `${column} = ${param} COLLATE NOCASE`,
};

/** Folds ASCII letters only, whatever the database's locale (the users' email index uses the same). */
const asciiFold = (expr: string) =>
  `translate(${expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;

export const postgresDialect: Dialect = {
  placeholder: (n) => `$${n}`,
  rowOrder: 'row_order',
  inJsonArray: (column, param, type) =>
    `${column} IN (SELECT json_array_elements_text(${param}::json)::${type})`,
  equalsIgnoringCase: (column, param) => `${asciiFold(column)} = ${asciiFold(`${param}::text`)}`,
};

/** A statement and its parameters, ready for either driver. */
export interface Statement {
  sql: string;
  values: SqlValue[];
}

/** Collects a statement's parameters, in the order the SQL text reads them (SQLite's `?` is positional). */
export class Query {
  readonly values: SqlValue[] = [];
  readonly #dialect: Dialect;

  constructor(dialect: Dialect) {
    this.#dialect = dialect;
  }

  /** Adds `value` as the next parameter and returns its placeholder. */
  param(value: SqlValue): string {
    this.values.push(value);
    return this.#dialect.placeholder(this.values.length);
  }

  /** `WHERE …` of `conditions` in `orderBy` order, fetching one row more than the page (see toPage). */
  paged(conditions: readonly string[], orderBy: string, page: PageRequest): string {
    return `WHERE ${conditions.join(' AND ')} ORDER BY ${orderBy}
      LIMIT ${this.param(page.limit + 1)} OFFSET ${this.param(page.offset)}`;
  }

  statement(sql: string): Statement {
    return { sql, values: this.values };
  }
}

/** Escapes LIKE wildcards so a user's `%` or `_` matches itself (used with ESCAPE '\'). */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The exact instant of an ISO 8601 bound, as stored (UTC, milliseconds), so that text comparison works. */
export const instant = (iso: string) => new Date(iso).toISOString();

/** Inserts `row`, a record of column → value. */
export function insert(d: Dialect, table: string, row: Record<string, SqlValue>): Statement {
  const q = new Query(d);
  const placeholders = Object.values(row).map((value) => q.param(value));
  return q.statement(
    `INSERT INTO ${table} (${Object.keys(row).join(', ')}) VALUES (${placeholders.join(', ')})`,
  );
}

// --- users and files

export function listUsers(d: Dialect, tenantId: string, filter: UserFilter, page: PageRequest): Statement {
  const q = new Query(d);
  const where = [`tenant_id = ${q.param(tenantId)}`, 'deleted_at IS NULL'];
  if (filter.reference !== undefined) where.push(`reference = ${q.param(filter.reference)}`);
  if (filter.email !== undefined) where.push(d.equalsIgnoringCase('email', q.param(filter.email)));
  return q.statement(`SELECT * FROM users ${q.paged(where, `created_at DESC, ${d.rowOrder} DESC`, page)}`);
}

/** Sets the given fields and `updated_at` of a live user, returning the row. */
export function updateUser(
  d: Dialect,
  tenantId: string,
  id: string,
  fields: UserFields,
  at: string,
): Statement {
  const q = new Query(d);
  const sets = userChanges(fields).map(([column, value]) => `${column} = ${q.param(value)}`);
  sets.push(`updated_at = ${q.param(at)}`);
  return q.statement(`UPDATE users SET ${sets.join(', ')}
    WHERE tenant_id = ${q.param(tenantId)} AND id = ${q.param(id)} AND deleted_at IS NULL RETURNING *`);
}

export function listFiles(d: Dialect, tenantId: string, filter: FileFilter, page: PageRequest): Statement {
  const q = new Query(d);
  const where = [`tenant_id = ${q.param(tenantId)}`];
  if (filter.name !== undefined) {
    // Both sides folded by toLowerCase (see fileRow).
    where.push(`name_lower LIKE ${q.param(likePrefix(filter.name.toLowerCase()))} ESCAPE '\\'`);
  }
  if (filter.session_id !== undefined) where.push(`session_id = ${q.param(filter.session_id)}`);
  if (filter.agent_ids !== undefined) {
    const agents = d.inJsonArray('s.agent_id', q.param(JSON.stringify(filter.agent_ids)), 'text');
    // A lookup of each file's own session by key (and tenant), not a scan of every session of the agents.
    where.push(`(session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s
      WHERE s.id = files.session_id AND s.tenant_id = files.tenant_id AND ${agents}))`);
  }
  if (filter.mime_type !== undefined) where.push(`mime_type = ${q.param(filter.mime_type)}`);
  if (filter.created_after !== undefined) {
    where.push(`created_at > ${q.param(instant(filter.created_after))}`);
  }
  if (filter.created_before !== undefined) {
    where.push(`created_at < ${q.param(instant(filter.created_before))}`);
  }
  return q.statement(`SELECT * FROM files ${q.paged(where, `created_at DESC, ${d.rowOrder} DESC`, page)}`);
}

/** The bytes of a tenant's stored files, and the count and bytes of those of one conversation (none for null). */
export function fileUsage(d: Dialect, tenantId: string, sessionId: string | null): Statement {
  const q = new Query(d);
  // A parameter each time it is read: SQLite's `?` is positional.
  const inSession = () => `session_id = ${q.param(sessionId)}`;
  return q.statement(`SELECT coalesce(sum(size), 0) AS tenant_bytes,
      count(CASE WHEN ${inSession()} THEN 1 END) AS session_files,
      coalesce(sum(CASE WHEN ${inSession()} THEN size END), 0) AS session_bytes
    FROM files WHERE tenant_id = ${q.param(tenantId)}`);
}

// --- sessions

export function sessionsDueForExpiry(
  d: Dialect,
  at: string,
  limit: number,
  shards: readonly number[] | undefined,
): Statement {
  const q = new Query(d);
  const where = [`status = 'active'`, `expires_at < ${q.param(instant(at))}`];
  if (shards) where.push(d.inJsonArray('shard', q.param(JSON.stringify(shards)), 'int'));
  return q.statement(
    `SELECT id FROM sessions WHERE ${where.join(' AND ')} ORDER BY expires_at LIMIT ${q.param(limit)}`,
  );
}

/** Ids of `tenantId`'s sessions created before `before`, oldest first (the retention sweep). */
export function sessionsCreatedBefore(
  d: Dialect,
  tenantId: string,
  before: string,
  limit: number,
  shards: readonly number[] | undefined,
): Statement {
  const q = new Query(d);
  const where = [`tenant_id = ${q.param(tenantId)}`, `created_at < ${q.param(instant(before))}`];
  if (shards) where.push(d.inJsonArray('shard', q.param(JSON.stringify(shards)), 'int'));
  return q.statement(
    `SELECT id FROM sessions WHERE ${where.join(' AND ')} ORDER BY created_at LIMIT ${q.param(limit)}`,
  );
}

/**
 * The tables whose rows name a session (`session_id`): deleting a session deletes its rows of each (a file's
 * contents go with the file). A table added later that names sessions belongs here (a test checks).
 */
export const SESSION_CHILD_TABLES = [
  'session_event_batches',
  'usage_daily',
  'session_tokens',
  'feedback',
  'idempotency_records',
  'tool_calls',
  'messages',
  'files',
] as const;

/** What deleting a session deletes: its rows of every child table, then the session (run in that order). */
export function deleteSessionStatements(d: Dialect, sessionId: string): Statement[] {
  return SESSION_CHILD_TABLES.map((table) => {
    const q = new Query(d);
    return q.statement(`DELETE FROM ${table} WHERE session_id = ${q.param(sessionId)}`);
  });
}

/** Makes `jti` a session's newest token when the newest is `expected`; a row changed means it did. */
export function replaceSessionToken(
  d: Dialect,
  sessionId: string,
  expected: string | null,
  jti: string,
  at: string,
): Statement {
  const q = new Query(d);
  if (expected === null) {
    return q.statement(
      `INSERT INTO session_tokens (session_id, jti, updated_at)
         SELECT id, ${q.param(jti)}, ${q.param(at)} FROM sessions WHERE id = ${q.param(sessionId)}
       ON CONFLICT (session_id) DO NOTHING`,
    );
  }
  return q.statement(
    `UPDATE session_tokens SET jti = ${q.param(jti)}, updated_at = ${q.param(at)}
       WHERE session_id = ${q.param(sessionId)} AND jti = ${q.param(expected)}`,
  );
}

/**
 * The session row's part of a write: the patch's columns (a column left out keeps its value), the added
 * messages' count, a new version and `updated_at`. Returns the new `messages_count`.
 */
export function patchSession(d: Dialect, write: SessionWrite, at: string, fenced = false): Statement {
  const q = new Query(d);
  const p = write.patch;
  // Every parameter cast, so that PostgreSQL knows its type where coalesce cannot tell it.
  const textParam = (value: string | null | undefined) => `CAST(${q.param(value ?? null)} AS TEXT)`;
  const expiresAt = p.expires_at === undefined ? null : instant(p.expires_at);
  // Set (to a time or to null) only when the patch names it, like close_reason.
  const wakeAt = p.wake_at === undefined || p.wake_at === null ? null : instant(p.wake_at);
  return q.statement(`UPDATE sessions SET
      status = coalesce(${textParam(p.status)}, status),
      closed_at = coalesce(${textParam(p.closed_at)}, closed_at),
      close_reason = CASE WHEN CAST(${q.param(p.close_reason === undefined ? 0 : 1)} AS INTEGER) = 1
        THEN ${textParam(p.close_reason)} ELSE close_reason END,
      expires_at = coalesce(${textParam(expiresAt)}, expires_at),
      last_message_at = coalesce(${textParam(p.last_message_at)}, last_message_at),
      wake_at = CASE WHEN CAST(${q.param(p.wake_at === undefined ? 0 : 1)} AS INTEGER) = 1
        THEN ${textParam(wakeAt)} ELSE wake_at END,
      handled_by = CASE WHEN CAST(${q.param(p.handoff === undefined ? 0 : 1)} AS INTEGER) = 1
        THEN ${textParam(p.handoff ? 'humans' : 'agent')} ELSE handled_by END,
      handoff = CASE WHEN CAST(${q.param(p.handoff === undefined ? 0 : 1)} AS INTEGER) = 1
        THEN ${textParam(p.handoff ? JSON.stringify(p.handoff) : null)} ELSE handoff END,
      metadata = coalesce(${textParam(p.metadata ? JSON.stringify(p.metadata) : null)}, metadata),
      messages_count = messages_count + CAST(${q.param(write.messages?.length ?? 0)} AS INTEGER),
      events_count = events_count + CAST(${q.param(write.events?.length ?? 0)} AS INTEGER),
      snapshot = ${q.param(p.snapshot)}, version = version + 1, updated_at = ${q.param(at)}
    WHERE id = ${q.param(write.session_id)}${fenced ? fenceHolds(q, write.fence) : ''}
    RETURNING messages_count, events_count`);
}

/**
 * The fence as a condition of the session's own write: the session is in the fence's shard and the shard's
 * epoch is the fence's. (SQLite: its one writer makes the check and the write one step; PostgreSQL locks the
 * shard's row first instead.)
 */
const fenceHolds = (q: Query, fence: SessionWrite['fence']) => `
      AND shard = ${q.param(fence.shard)}
      AND (SELECT o.epoch FROM shard_owner o WHERE o.shard = sessions.shard) = ${q.param(fence.epoch)}`;

/**
 * The one row of the events a write appends (none when it appends none): the batch's events in order, each
 * `[type, data]`, under the seq of its last, `eventsCount`. A write's events are numbered on contiguously
 * (events_count moves by their count in the same UPDATE), so the first's seq is last_seq − length + 1.
 */
export function sessionEventBatch(d: Dialect, write: SessionWrite, eventsCount: number, at: string) {
  const events = write.events ?? [];
  if (events.length === 0) return null;
  return insert(d, 'session_event_batches', {
    session_id: write.session_id,
    last_seq: eventsCount,
    events: JSON.stringify(events.map((e) => [e.type, e.data])),
    created_at: at,
  });
}

/** A session's messages of the ids in `ids`, in order. */
export function messagesById(d: Dialect, sessionId: string, ids: readonly string[]): Statement {
  const q = new Query(d);
  return q.statement(`SELECT * FROM messages WHERE session_id = ${q.param(sessionId)}
    AND ${d.inJsonArray('id', q.param(JSON.stringify(ids)), 'text')} ORDER BY seq`);
}

/**
 * The batches holding a session's events after seq `after`, oldest first (toSessionEvents expands them):
 * each of the `limit` batches holds one event past `after` at least, so they hold `limit` events when the
 * log has them.
 */
export function sessionEventBatches(d: Dialect, sessionId: string, after: number, limit: number): Statement {
  const q = new Query(d);
  return q.statement(`SELECT last_seq, events, created_at FROM session_event_batches
    WHERE session_id = ${q.param(sessionId)} AND last_seq > ${q.param(after)}
    ORDER BY last_seq LIMIT ${q.param(limit)}`);
}

/** Records a new use of an Idempotency-Key, replacing the whole earlier record: a new use has no answer yet. */
export function recordIdempotencyKey(d: Dialect, write: SessionWrite, at: string): Statement | null {
  const k = write.idempotency;
  if (!k) return null;
  const { sql, values } = insert(d, 'idempotency_records', idempotencyRow(write.session_id, k, at));
  return {
    sql: `${sql} ON CONFLICT (session_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
      turn_id = excluded.turn_id, user_message_id = excluded.user_message_id, status_code = NULL,
      response = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
    values,
  };
}

/** Stores the answer of a finished attempt against its key, for replays. */
export function storeIdempotencyResponse(d: Dialect, write: SessionWrite): Statement | null {
  const r = write.idempotencyResponse;
  if (!r) return null;
  const q = new Query(d);
  return q.statement(`UPDATE idempotency_records
    SET status_code = ${q.param(r.status_code)}, response = ${q.param(JSON.stringify(r.response))}
    WHERE session_id = ${q.param(write.session_id)} AND key = ${q.param(r.key)}`);
}

/** A step's tool calls (committed before they run) and the results that arrived, of one write. */
export function toolCallStatements(d: Dialect, write: SessionWrite, at: string): Statement[] {
  const inserts = (write.toolCalls ?? []).map((call) =>
    insert(d, 'tool_calls', toolCallRow(write.session_id, call, write.fence.epoch, at)),
  );
  const results = (write.toolResults ?? []).map((r) => {
    const q = new Query(d);
    return q.statement(`UPDATE tool_calls SET status = ${q.param(r.status)},
      output = ${q.param(JSON.stringify(r.output ?? null))}, duration_ms = ${q.param(Math.round(r.duration_ms))},
      completed_at = ${q.param(at)}, epoch = ${q.param(write.fence.epoch)},
      completed_seq = (SELECT COALESCE(MAX(completed_seq), 0) + 1 FROM tool_calls
        WHERE session_id = ${q.param(write.session_id)} AND turn_id = ${q.param(r.turn_id)})
      WHERE session_id = ${q.param(write.session_id)} AND turn_id = ${q.param(r.turn_id)} AND id = ${q.param(r.id)}
        AND status IS NULL`);
  });
  return [...inserts, ...results];
}

// --- feedback

/** The feedback of these sessions (none for a session without). */
export function feedbackOf(d: Dialect, sessionIds: readonly string[]): Statement {
  const q = new Query(d);
  const ids = d.inJsonArray('session_id', q.param(JSON.stringify(sessionIds)), 'text');
  return q.statement(`SELECT * FROM feedback WHERE ${ids}`);
}

/** Stores a conversation's feedback, replacing an earlier one but keeping its id; returns the row. */
export function upsertFeedback(
  d: Dialect,
  sessionId: string,
  feedback: Omit<Feedback, 'session_id' | 'submitted_at'>,
  at: string,
): Statement {
  const { sql, values } = insert(d, 'feedback', feedbackRow(sessionId, feedback, at));
  return {
    sql: `${sql} ON CONFLICT (session_id) DO UPDATE SET score = excluded.score, comment = excluded.comment,
      metadata = excluded.metadata, submitted_at = excluded.submitted_at RETURNING *`,
    values,
  };
}

/**
 * The last `limit` messages of a session, oldest first, back only while their content adds up to at most
 * `maxChars` characters, the newest always included: a long history is cut in the database, so what reaches
 * the process is bounded (the database still reads the candidate rows).
 */
export function recentMessages(d: Dialect, sessionId: string, limit: number, maxChars: number): Statement {
  const p = d.placeholder;
  return {
    sql: `SELECT * FROM (
            SELECT r.*, ROW_NUMBER() OVER newer AS newest, SUM(length(r.content)) OVER newer AS chars
              FROM (SELECT * FROM messages WHERE session_id = ${p(1)} ORDER BY seq DESC LIMIT ${p(2)}) AS r
              WINDOW newer AS (ORDER BY r.seq DESC ROWS UNBOUNDED PRECEDING)
          ) AS recent
          WHERE newest = 1 OR chars <= ${p(3)}
          ORDER BY seq`,
    values: [sessionId, limit, maxChars],
  };
}
