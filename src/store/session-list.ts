// The session list (GET /v1/agents/sessions), for both stores: its statement with the filters an operator
// console uses, and its cursor. The cursor is opaque to clients: it names the last session of a page by its
// creation time and its row's place (SQLite's rowid, PostgreSQL's row_order), the very keys the list is
// ordered by, so the next page starts after it whatever was created since.
import { type Row, sessionColumns, text, toSession } from './rows.ts';
import { type Dialect, instant, Query, type Statement } from './sql.ts';
import type { SessionCursor, SessionFilter, SessionPage, SessionPageRequest } from './store.ts';

export function listSessions(
  d: Dialect,
  tenantId: string,
  filter: SessionFilter,
  page: SessionPageRequest,
  at = new Date().toISOString(),
): Statement {
  const q = new Query(d);
  const where = [`s.tenant_id = ${q.param(tenantId)}`];
  if (filter.status !== undefined) where.push(`s.status = ${q.param(filter.status)}`);
  if (filter.agent_id !== undefined) where.push(`s.agent_id = ${q.param(filter.agent_id)}`);
  if (filter.user_id !== undefined) where.push(`s.user_id = ${q.param(filter.user_id)}`);
  if (filter.agent_ids !== undefined) {
    // One JSON parameter instead of a variable IN list keeps the statement the same (SQLite caches it).
    where.push(d.inJsonArray('s.agent_id', q.param(JSON.stringify(filter.agent_ids)), 'text'));
  }
  if (filter.handled_by !== undefined) where.push(`s.handled_by = ${q.param(filter.handled_by)}`);
  if (filter.user_reference !== undefined) where.push(`u.reference = ${q.param(filter.user_reference)}`);
  if (filter.updated_after !== undefined) {
    where.push(`s.updated_at > ${q.param(instant(filter.updated_after))}`);
  }
  if (filter.pending_approval !== undefined) {
    // A call past its time counts as denied already (pendingApprovals does not show it either).
    const waiting = `EXISTS (SELECT 1 FROM tool_calls c WHERE c.session_id = s.id
      AND c.status = 'awaiting_approval' AND (c.expires_at IS NULL OR c.expires_at > ${q.param(instant(at))}))`;
    where.push(filter.pending_approval ? waiting : `NOT ${waiting}`);
  }
  if (page.after) {
    const { created_at, row } = page.after;
    where.push(`(s.created_at < ${q.param(created_at)} OR (s.created_at = ${q.param(created_at)}
      AND s.${d.rowOrder} < ${q.param(row)}))`);
  }
  return q.statement(`SELECT ${sessionColumns}, s.${d.rowOrder} AS cursor_row
    FROM sessions s LEFT JOIN users u ON u.id = s.user_id
    ${q.paged(where, `s.created_at DESC, s.${d.rowOrder} DESC`, page)}`);
}

export function encodeSessionCursor(cursor: SessionCursor): string {
  return Buffer.from(JSON.stringify([cursor.created_at, cursor.row])).toString('base64url');
}

/** The cursor `token` holds, or null when it is not one this service made. */
export function decodeSessionCursor(token: string): SessionCursor | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2) return null;
    const [createdAt, row] = value;
    if (typeof createdAt !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(createdAt))
      return null;
    if (!Number.isSafeInteger(row) || row < 0) return null;
    return { created_at: createdAt, row };
  } catch {
    return null;
  }
}

/** A page from the rows of listSessions (one more than the page when another follows). */
export function toSessionPage(rows: Row[], page: SessionPageRequest): SessionPage {
  const more = rows.length > page.limit;
  const kept = more ? rows.slice(0, page.limit) : rows;
  const last = kept.at(-1);
  return {
    items: kept.map(toSession),
    next_offset: more && !page.after ? page.offset + page.limit : null,
    next_cursor:
      more && last
        ? encodeSessionCursor({ created_at: text(last, 'created_at'), row: Number(last.cursor_row) })
        : null,
  };
}
