// Rows to records, for both stores: the readers that turn a row of either driver into the records of
// store.ts (new-rows.ts has the rows records are written as). Both schemas keep instants and JSON as text,
// so node:sqlite and pg hand back the same values; the one difference, PostgreSQL's BIGINT arriving as a
// string, is handled where it occurs (toFile).
import { SESSION_STATUSES } from '#schemas';
import type {
  ApiKeyRecord,
  ContentBlock,
  Feedback,
  IdempotencyRecord,
  JsonObject,
  MessageRecord,
  MessageUsage,
  Page,
  PageRequest,
  SessionEventRecord,
  SessionRecord,
  StopReason,
  StoredFile,
  Tenant,
  ToolCallRecord,
  ToolCallSummary,
  User,
} from './store.ts';
import { fullUsage, STOP_REASONS } from './store.ts';

/** A row as either driver returns it. */
export type Row = Record<string, unknown>;

/** What a statement's parameters may hold in both drivers. */
export type SqlValue = string | number | null | Uint8Array;

export const now = () => new Date().toISOString();
export const json = (value: unknown) => JSON.stringify(value ?? {});

/** The columns of a session as records show it: the user's reference comes from a join (`u`). */
export const sessionColumns = `s.id, s.tenant_id, s.agent_id, s.user_id, u.reference AS user_reference, s.status,
  s.created_at, s.updated_at, s.messages_count, s.last_message_at, s.closed_at, s.close_reason, s.expires_at,
  s.context, s.metadata, s.shard, s.handled_by, s.handoff`;

// --- reading: the schema's types are checked, not assumed, so a mistake in a query fails loudly here

export function text(r: Row, column: string): string {
  const value = r[column];
  if (typeof value !== 'string') throw new TypeError(`Column ${column} is not text`);
  return value;
}

export function textOrNull(r: Row, column: string): string | null {
  return r[column] === null || r[column] === undefined ? null : text(r, column);
}

export function integer(r: Row, column: string): number {
  const value = r[column];
  if (typeof value !== 'number') throw new TypeError(`Column ${column} is not a number`);
  return value;
}

export function oneOf<T extends string>(r: Row, column: string, values: readonly T[]): T {
  const found = values.find((v) => v === r[column]);
  if (found === undefined) throw new TypeError(`Column ${column} holds an unknown value`);
  return found;
}

/** A JSON object column; an absent one reads as `{}`. */
const object = (r: Row, column: string): JsonObject => {
  const value = r[column];
  return typeof value === 'string' ? JSON.parse(value) : {};
};

/**
 * The one empty object of the session rows with no context or metadata: a resident session keeps its row for as
 * long as its actor (56 B each). Frozen: nothing writes into a row's objects (a change replaces them).
 */
const EMPTY: JsonObject = Object.freeze({});
const sessionObject = (r: Row, column: string): JsonObject =>
  r[column] === '{}' ? EMPTY : object(r, column);

const roles: readonly MessageRecord['role'][] = ['user', 'assistant'];

function stopReason(r: Row): StopReason | null {
  const value = r.stop_reason;
  if (value === null || value === undefined) return null;
  // A reason written by a newer version (the column is unchecked) reads as a finished reply, not a failure.
  return STOP_REASONS.find((known) => known === value) ?? 'end';
}

function usage(r: Row, column = 'usage'): MessageUsage | null {
  const raw = textOrNull(r, column);
  if (raw === null) return null;
  const stored = JSON.parse(raw);
  if (typeof stored.input_tokens !== 'number' || typeof stored.output_tokens !== 'number')
    throw new TypeError('Column usage holds no token counts');
  // Usage stored before the model, cache and cost were kept reads with them 0 (null).
  return fullUsage(stored);
}

export const toTenant = (r: Row): Tenant => ({
  id: text(r, 'id'),
  name: text(r, 'name'),
  created_at: text(r, 'created_at'),
});

export const toApiKey = (r: Row): ApiKeyRecord => ({
  id: text(r, 'id'),
  tenant_id: text(r, 'tenant_id'),
  prefix: text(r, 'prefix'),
  agents: JSON.parse(text(r, 'agents')),
  created_at: text(r, 'created_at'),
  revoked_at: textOrNull(r, 'revoked_at'),
});

export const toUser = (r: Row): User => ({
  id: text(r, 'id'),
  created_at: text(r, 'created_at'),
  updated_at: text(r, 'updated_at'),
  reference: textOrNull(r, 'reference'),
  name: textOrNull(r, 'name'),
  email: textOrNull(r, 'email'),
  phone: textOrNull(r, 'phone'),
  metadata: object(r, 'metadata'),
  info: object(r, 'info'),
});

export const toFile = (r: Row): StoredFile => ({
  id: text(r, 'id'),
  name: text(r, 'name'),
  // PostgreSQL's BIGINT arrives as a string (pg does not guess at precision); sizes are far below 2^53.
  size: Number(r.size),
  mime_type: text(r, 'mime_type'),
  created_at: text(r, 'created_at'),
  metadata: object(r, 'metadata'),
  session_id: textOrNull(r, 'session_id'),
});

export const toSession = (r: Row): SessionRecord => {
  const userId = textOrNull(r, 'user_id');
  return {
    id: text(r, 'id'),
    tenant_id: text(r, 'tenant_id'),
    agent_id: text(r, 'agent_id'),
    user: userId ? { id: userId, reference: textOrNull(r, 'user_reference') } : null,
    status: oneOf(r, 'status', SESSION_STATUSES),
    created_at: text(r, 'created_at'),
    updated_at: text(r, 'updated_at'),
    messages_count: integer(r, 'messages_count'),
    last_message_at: textOrNull(r, 'last_message_at'),
    closed_at: textOrNull(r, 'closed_at'),
    close_reason: textOrNull(r, 'close_reason'),
    expires_at: textOrNull(r, 'expires_at'),
    context: sessionObject(r, 'context'),
    metadata: sessionObject(r, 'metadata'),
    shard: integer(r, 'shard'),
    handled_by: oneOf(r, 'handled_by', handlers),
    handoff: r.handoff === null || r.handoff === undefined ? null : JSON.parse(text(r, 'handoff')),
  };
};

const handlers: readonly SessionRecord['handled_by'][] = ['agent', 'humans'];

/**
 * The events of a session's log after seq `after`, at most `limit`, from its batches oldest first (rows of
 * sessionEventBatches): a batch's events are numbered on to its last_seq, and one straddling `after` gives
 * only those past it.
 */
export function toSessionEvents(rows: readonly Row[], after: number, limit: number): SessionEventRecord[] {
  const events: SessionEventRecord[] = [];
  for (const r of rows) {
    const batch: [string, unknown][] = JSON.parse(text(r, 'events'));
    const first = Number(r.last_seq) - batch.length + 1;
    const created_at = text(r, 'created_at');
    for (const [i, [type, data]] of batch.entries()) {
      if (events.length === limit) return events;
      if (first + i > after) events.push({ seq: first + i, type, data, created_at });
    }
  }
  return events;
}

/** A session and its actor snapshot, from a row of sessionColumns and `s.snapshot`. */
export const toLoadedSession = (r: Row | undefined) =>
  r ? { session: toSession(r), snapshot: textOrNull(r, 'snapshot') } : null;

export const toMessage = (r: Row): MessageRecord => {
  const content: ContentBlock[] = JSON.parse(text(r, 'content'));
  return {
    id: text(r, 'id'),
    session_id: text(r, 'session_id'),
    role: oneOf(r, 'role', roles),
    content,
    metadata: r.metadata === null ? null : object(r, 'metadata'),
    created_at: text(r, 'created_at'),
    turn_id: textOrNull(r, 'turn_id'),
    stop_reason: stopReason(r),
    usage: usage(r),
    tool_calls: toolCalls(r),
    author: r.author === null || r.author === undefined ? null : JSON.parse(text(r, 'author')),
  };
};

function toolCalls(r: Row): ToolCallSummary[] | null {
  const raw = textOrNull(r, 'tool_calls');
  return raw === null ? null : JSON.parse(raw);
}

const toolStatuses: readonly NonNullable<ToolCallRecord['status']>[] = ['ok', 'error', 'awaiting_approval'];
const approvers: readonly NonNullable<ToolCallRecord['approver']>[] = ['user', 'operator'];
const decisions: readonly NonNullable<ToolCallRecord['decision']>[] = ['approved', 'denied'];
const deciders: readonly NonNullable<ToolCallRecord['decided_by']>[] = ['user', 'operator', 'system'];

/** A column that holds one of `values` or null. */
const oneOfOrNull = <T extends string>(r: Row, column: string, values: readonly T[]): T | null =>
  r[column] === null || r[column] === undefined ? null : oneOf(r, column, values);

export const toToolCall = (r: Row): ToolCallRecord => {
  const output = textOrNull(r, 'output');
  return {
    id: text(r, 'id'),
    turn_id: text(r, 'turn_id'),
    step: integer(r, 'step'),
    position: integer(r, 'position'),
    name: text(r, 'name'),
    input: JSON.parse(text(r, 'input')),
    step_text: textOrNull(r, 'step_text'),
    step_usage: usage(r, 'step_usage'),
    status: oneOfOrNull(r, 'status', toolStatuses),
    output: output === null ? null : JSON.parse(output),
    duration_ms: r.duration_ms === null ? null : integer(r, 'duration_ms'),
    created_at: text(r, 'created_at'),
    completed_at: textOrNull(r, 'completed_at'),
    completed_seq: r.completed_seq === null ? null : integer(r, 'completed_seq'),
    approver: oneOfOrNull(r, 'approver', approvers),
    expires_at: textOrNull(r, 'expires_at'),
    decision: oneOfOrNull(r, 'decision', decisions),
    decided_by: oneOfOrNull(r, 'decided_by', deciders),
    decision_reason: textOrNull(r, 'decision_reason'),
    decided_at: textOrNull(r, 'decided_at'),
  };
};

/** A call waiting for a decision, with the session it belongs to (awaitingApproval reads several). */
export const toWaitingCall = (r: Row) => ({ ...toToolCall(r), session_id: text(r, 'session_id') });

export const toFeedback = (r: Row): Feedback => ({
  id: text(r, 'id'),
  session_id: text(r, 'session_id'),
  score: integer(r, 'score'),
  comment: textOrNull(r, 'comment'),
  metadata: object(r, 'metadata'),
  submitted_at: text(r, 'submitted_at'),
});

export const toIdempotency = (r: Row): IdempotencyRecord => {
  const response = textOrNull(r, 'response');
  return {
    session_id: text(r, 'session_id'),
    key: text(r, 'key'),
    fingerprint: text(r, 'fingerprint'),
    turn_id: text(r, 'turn_id'),
    status_code: r.status_code === null || r.status_code === undefined ? null : integer(r, 'status_code'),
    response: response === null ? null : JSON.parse(response),
    created_at: text(r, 'created_at'),
    expires_at: text(r, 'expires_at'),
  };
};

/** Cuts a `limit + 1` row fetch down to a page. */
export function toPage<T>(rows: T[], page: PageRequest): Page<T> {
  const more = rows.length > page.limit;
  return {
    items: more ? rows.slice(0, page.limit) : rows,
    next_offset: more ? page.offset + page.limit : null,
  };
}
