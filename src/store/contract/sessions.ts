// The Store's sessions: shard claims, the session rows, and the one fenced write (SessionWrite) that
// commits a step of a session (its messages, Idempotency-Key records, tool calls and webhook events).
import type { SessionStatus } from '#schemas';
import type { JsonObject, Page, PageRequest } from './common.ts';
import type { MessageRecord, NewMessage } from './messages.ts';
import type { NewToolCall, ToolCallDecision, ToolCallResult } from './tool-calls.ts';
import type { WebhookEvent } from './webhooks.ts';

export type { SessionStatus };

/** Why and since when people handle a session, and who asked for them. */
export interface Handoff {
  requested_at: string;
  reason: string | null;
  by: 'agent' | 'integrator' | 'user';
}

export interface SessionRecord {
  id: string;
  tenant_id: string;
  agent_id: string;
  user: { id: string; reference: string | null } | null;
  status: SessionStatus;
  created_at: string;
  updated_at: string;
  messages_count: number;
  last_message_at: string | null;
  closed_at: string | null;
  close_reason: string | null;
  expires_at: string | null;
  context: JsonObject;
  metadata: JsonObject;
  shard: number;
  /** Who answers the user: the agent, or people after a handoff. */
  handled_by: 'agent' | 'humans';
  /** The handoff in force; null while the agent answers. */
  handoff: Handoff | null;
}

export interface NewSession {
  id: string;
  agent_id: string;
  user_id: string | null;
  shard: number;
  context: JsonObject;
  metadata: JsonObject;
  expires_at: string;
  /** The session actor's persisted snapshot (JSON). */
  snapshot: string;
}

export interface SessionFilter {
  status?: SessionStatus;
  agent_id?: string;
  user_id?: string;
  /** Only sessions of these agents (the API key's scope); undefined for every agent. */
  agent_ids?: readonly string[];
  /** Who answers the user: the agent, or people after a handoff. */
  handled_by?: 'agent' | 'humans';
  /** true: only sessions with a call waiting for a decision (not yet past its time); false: only the others. */
  pending_approval?: boolean;
  /** Only sessions of the user with this reference. */
  user_reference?: string;
  /** Only sessions changed after this instant (ISO 8601, exclusive). */
  updated_after?: string;
}

/** Where a page of sessions starts: after this session, in the newest-first order (session-list.ts). */
export interface SessionCursor {
  created_at: string;
  /** The row's place among sessions created in the same millisecond (SQLite's rowid, PostgreSQL's row_order). */
  row: number;
}

/** A page of sessions: by `offset`, or after `after` (then offset is 0). */
export interface SessionPageRequest extends PageRequest {
  after?: SessionCursor;
}

/** A page of sessions, with the opaque cursor of the next one (null when no session follows). */
export interface SessionPage extends Page<SessionRecord> {
  next_cursor: string | null;
}

/** The fencing token of a shard: a write is refused unless the shard's epoch is still this one. */
export interface Fence {
  shard: number;
  epoch: number;
}

/** A session write carrying a stale epoch: another process owns the shard now; nothing was written. */
export class StaleEpochError extends Error {
  override name = 'StaleEpochError';
  readonly shard: number;
  constructor(shard: number) {
    super(`Shard ${shard} has a newer owner; the write was refused`);
    this.shard = shard;
  }
}

/** Everything one step of a session commits, in one transaction, fenced. */
export interface SessionWrite {
  session_id: string;
  fence: Fence;
  /** The time of the write, for `updated_at` and the messages' `created_at` (default: now). */
  at?: string;
  /** Appended after the session's last message, in order; `messages_count` grows by their number. */
  messages?: NewMessage[];
  /** Columns to set; `updated_at` is always set. */
  patch: {
    status?: SessionStatus;
    closed_at?: string;
    close_reason?: string | null;
    expires_at?: string;
    last_message_at?: string;
    /**
     * When the owner must next act on the session's paused turn unasked (the sweep's sessionsToWake); null
     * clears it, left out keeps it.
     */
    wake_at?: string | null;
    /** A handoff to people (handled_by humans), or null for the agent again; left out keeps them. */
    handoff?: Handoff | null;
    /** The session's metadata, replaced whole; left out keeps it. */
    metadata?: JsonObject;
    snapshot: string;
  };
  /** Records a new Idempotency-Key use (replacing an expired record of the same key). */
  idempotency?: {
    key: string;
    fingerprint: string;
    turn_id: string;
    user_message_id: string | null;
    expires_at: string;
  };
  /** The answer of a finished attempt, stored against its key for replays. */
  idempotencyResponse?: { key: string; status_code: number; response: unknown };
  /** Tool calls a step asked for, committed before any of them runs. */
  toolCalls?: NewToolCall[];
  /** Results of committed tool calls. */
  toolResults?: ToolCallResult[];
  /** Decisions on calls awaiting approval; one on a call that is not waiting undoes the write (ApprovalConflictError). */
  decisions?: ToolCallDecision[];
  /** Webhook events the write reports (session.closed, turn.completed, …), queued in its transaction. */
  webhookEvents?: WebhookEvent[];
  /** The session events the write makes, appended to its event log numbered on from `events_count`. */
  events?: NewSessionEvent[];
}

/** An event of a session's log (what its event stream sends), as a commit appends it. */
export interface NewSessionEvent {
  type: string;
  /** The event's data as JSON-able values; messages in it are stored records (each family shows its view). */
  data: unknown;
}

/** An event of a session's log as stored: its place (`seq`, from 1, per session) and when it was committed. */
export interface SessionEventRecord {
  seq: number;
  type: string;
  data: unknown;
  created_at: string;
}

export interface SessionWriteResult {
  messages: MessageRecord[];
  messages_count: number;
  updated_at: string;
  /** The seq of the session's last event after the write (0 when it has none). */
  events_count: number;
  /** How many webhook deliveries the write queued pending (0 when no endpoint subscribes to its events). */
  webhook_deliveries: number;
  /** How many it stored refused instead, their tenant's outbox being past its cap. */
  webhook_refused: number;
}

export interface SessionStore {
  /** Takes ownership of shards: bumps each epoch (fencing out earlier owners) and returns the new ones. */
  claimShards(owner: string, shards: readonly number[]): Promise<Map<number, number>>;
  /**
   * Whether `fence` still holds: its epoch is its shard's newest. One read, for an answer a process gives
   * from memory without writing (no claim since ours means nobody else wrote the shard's sessions).
   */
  holdsFence(fence: Fence): Promise<boolean>;

  /** Creates a session; throws StaleEpochError when the fence is stale. */
  createSession(tenantId: string, session: NewSession, fence: Fence): Promise<SessionRecord>;
  /** A tenant's session (any status). */
  getSession(tenantId: string, id: string): Promise<SessionRecord | null>;
  /** A session and its actor snapshot, for activation (no tenant check: the caller routes by id). */
  loadSession(id: string): Promise<{ session: SessionRecord; snapshot: string | null } | null>;
  /**
   * Newest first; `next_cursor` continues after the page's last session whatever was created since, and
   * `next_offset` (null when paging by cursor) counts from the first.
   */
  listSessions(tenantId: string, filter: SessionFilter, page: SessionPageRequest): Promise<SessionPage>;
  /** Commits one step of a session atomically; throws StaleEpochError (writing nothing) when fenced out. */
  commitSession(write: SessionWrite): Promise<SessionWriteResult>;
  /** Ids of active sessions whose expiry has passed, oldest expiry first; only in `shards` when given. */
  sessionsDueForExpiry(now: string, limit: number, shards?: readonly number[]): Promise<string[]>;
  /** Ids of `tenantId`'s sessions created before `before`, oldest first; only in `shards` when given. */
  sessionsCreatedBefore(
    tenantId: string,
    before: string,
    limit: number,
    shards?: readonly number[],
  ): Promise<string[]>;
  /**
   * Deletes a session with everything it holds (messages, files, tool calls, Idempotency-Key records,
   * feedback, its token record, its event log) in one transaction; throws StaleEpochError (deleting
   * nothing) when fenced out. False when there is no such session.
   */
  deleteSession(sessionId: string, fence: Fence): Promise<boolean>;
  /**
   * Makes `jti` the session's newest token when its newest is `expected` (null: it has none yet), at once,
   * so that of two refreshes showing the same token one wins. False when it is not (or no such session).
   */
  replaceSessionToken(sessionId: string, expected: string | null, jti: string): Promise<boolean>;
  /** Ids of active sessions whose wake_at has passed, earliest first; only in `shards` when given. */
  sessionsToWake(now: string, limit: number, shards?: readonly number[]): Promise<string[]>;
  /** The session's events after `after` (a seq; 0 for all), oldest first, at most `limit`. */
  sessionEvents(sessionId: string, after: number, limit: number): Promise<SessionEventRecord[]>;
}
