// The Store's messages and what else a conversation keeps besides its session row: its feedback and its
// Idempotency-Key records. Messages and records are written by session commits (see SessionWrite).
import type { StopReason } from '#schemas';
import type { JsonObject, MessageUsage, NewUsage, Page, PageRequest } from './common.ts';
import type { ToolCallSummary } from './tool-calls.ts';
import type { WebhookEvent } from './webhooks.ts';

/** A content block as stored: the normalised form of the request's blocks. */
export type ContentBlock = { type: 'text'; text: string } | { type: 'image' | 'file'; file_id: string };

export interface MessageRecord {
  id: string;
  session_id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  metadata: JsonObject | null;
  created_at: string;
  /** The turn that stored the message. */
  turn_id: string | null;
  /** Why the model stopped; null on messages no model produced (user, authored, inactivity). */
  stop_reason: StopReason | null;
  /** The model call that produced the message; null likewise. */
  usage: MessageUsage | null;
  /** The turn's tool calls, on a model's reply; null on messages no model produced and on replies before tools. */
  tool_calls: ToolCallSummary[] | null;
  /** The operator who wrote an assistant message while people handled the session; null otherwise. */
  author: MessageAuthor | null;
}

/** Who wrote an operator's message. */
export interface MessageAuthor {
  id: string;
  name: string;
}

export interface NewMessage {
  id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  metadata: JsonObject | null;
  turn_id: string;
  /** Set on a model's reply only; absent is null. */
  stop_reason?: StopReason | null;
  usage?: NewUsage | null;
  tool_calls?: ToolCallSummary[] | null;
  author?: MessageAuthor | null;
}

/** The one feedback of a conversation (NPS-style score 0–10). */
export interface Feedback {
  id: string;
  session_id: string;
  score: number;
  comment: string | null;
  metadata: JsonObject;
  submitted_at: string;
}

export interface IdempotencyRecord {
  session_id: string;
  key: string;
  fingerprint: string;
  turn_id: string;
  /** Null until the first attempt finished; then the answer to replay. */
  status_code: number | null;
  response: unknown;
  created_at: string;
  expires_at: string;
}

export interface MessageStore {
  getMessage(tenantId: string, sessionId: string, messageId: string): Promise<MessageRecord | null>;
  /** Oldest first; null when the session is not the tenant's. */
  listMessages(tenantId: string, sessionId: string, page: PageRequest): Promise<Page<MessageRecord> | null>;
  /**
   * The last `limit` messages of a session, oldest first (the model's view of the conversation), going back
   * only while their stored content (JSON) adds up to at most `maxChars` characters; the newest is always in.
   */
  recentMessages(sessionId: string, limit: number, maxChars: number): Promise<MessageRecord[]>;
  /** The messages a turn stored, in order. */
  turnMessages(sessionId: string, turnId: string): Promise<MessageRecord[]>;
  /** The session's messages of these ids, in order (the session's event log names its messages by id). */
  messagesById(sessionId: string, ids: readonly string[]): Promise<MessageRecord[]>;

  /** Stores the conversation's feedback, replacing an earlier one but keeping its id. */
  upsertFeedback(
    sessionId: string,
    feedback: Omit<Feedback, 'session_id' | 'submitted_at'>,
    /** The event reporting the stored feedback, queued in its transaction. */
    event?: (stored: Feedback) => WebhookEvent,
  ): Promise<Feedback>;
  getFeedback(sessionId: string): Promise<Feedback | null>;
  /** The feedback of these sessions, in no order (a session without is left out): the Session records show it. */
  feedbackOf(sessionIds: readonly string[]): Promise<Feedback[]>;

  /** The record of a key, expired or not (the caller decides). */
  getIdempotencyRecord(sessionId: string, key: string): Promise<IdempotencyRecord | null>;
  /** Deletes records whose retention has passed; returns how many. */
  deleteExpiredIdempotencyRecords(now: string): Promise<number>;
}
