// The one Store interface. SQLite (one machine) and PostgreSQL (several) implement it and pass one
// contract suite (test/store/contract/). Records are shaped like the API's resources (snake_case).
import type { SessionStatus } from '../machines/session.ts';

export type JsonObject = { [key: string]: unknown };

export interface PageRequest {
  limit: number;
  offset: number;
}

/** `next_offset` is null as soon as no item follows the page. */
export interface Page<T> {
  items: T[];
  next_offset: number | null;
}

export interface Tenant {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  tenant_id: string;
  /** The first characters of the key, for recognising it in listings. */
  prefix: string;
  /** Agent ids the key may use; `['*']` for every agent. */
  agents: string[];
  created_at: string;
  revoked_at: string | null;
}

export interface NewApiKey {
  id: string;
  tenant_id: string;
  hash: string;
  prefix: string;
  agents: string[];
}

export interface User {
  id: string;
  created_at: string;
  updated_at: string;
  reference: string | null;
  name: string | null;
  email: string | null;
  phone: string | null;
  metadata: JsonObject;
  info: JsonObject;
}

export interface UserFields {
  reference?: string | null;
  name?: string | null;
  email?: string | null;
  phone?: string | null;
  metadata?: JsonObject;
  info?: JsonObject;
}

export interface UserFilter {
  reference?: string;
  email?: string;
}

export interface StoredFile {
  id: string;
  name: string;
  size: number;
  mime_type: string;
  created_at: string;
  metadata: JsonObject;
  /** The conversation the file was uploaded in, or null for the tenant pool. */
  session_id: string | null;
}

export interface NewFile {
  id: string;
  name: string;
  mime_type: string;
  metadata: JsonObject;
  session_id: string | null;
}

/** The room an upload may take, checked in the transaction that stores it; 0 bytes for the tenant is no limit. */
export interface FileQuota {
  /** Files and bytes kept per conversation; applies to a file with a session_id. */
  conversationFiles: number;
  conversationBytes: number;
  /** Bytes kept per tenant, pool and conversations together. */
  tenantBytes: number;
}

export interface FileFilter {
  /** Case-insensitive prefix of the file name. */
  name?: string;
  mime_type?: string;
  /** ISO 8601 instants; both bounds are exclusive. */
  created_after?: string;
  created_before?: string;
  /** Only the files uploaded in this conversation. */
  session_id?: string;
  /** Only pool files and files of these agents' sessions (the API key's scope); undefined for every agent. */
  agent_ids?: readonly string[];
}

export type { SessionStatus };

/** A content block as stored: the normalised form of the request's blocks. */
export type ContentBlock = { type: 'text'; text: string } | { type: 'image' | 'file'; file_id: string };

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
}

/** Why a model's reply ended (DESIGN §13); `max_steps` and `error` are for tool steps to come. */
export const STOP_REASONS = ['end', 'max_tokens', 'max_steps', 'content_filter', 'error'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/** What one model call cost, as its provider reported it. */
export interface MessageUsage {
  input_tokens: number;
  output_tokens: number;
}

/** A tool call as an assistant message shows it (DESIGN §13): what was asked, what came back. */
export interface ToolCallSummary {
  id: string;
  name: string;
  input: unknown;
  output: unknown;
  status: 'ok' | 'error';
  duration_ms: number;
}

/**
 * A tool call of a turn in progress, committed before the tool runs; its result is committed when it
 * arrives. A step's first call (`position` 0) also keeps the text the model wrote in that step and the
 * step's usage, so that a turn resumed after a crash gives the model the same steps again.
 */
export interface ToolCallRecord {
  id: string;
  turn_id: string;
  /** The model call that asked for it, from 1. */
  step: number;
  /** Its place among the step's calls, from 0. */
  position: number;
  name: string;
  input: unknown;
  step_text: string | null;
  step_usage: MessageUsage | null;
  /** Null until the result is committed. */
  status: 'ok' | 'error' | null;
  output: unknown;
  duration_ms: number | null;
  created_at: string;
  /** When its result was committed. */
  completed_at: string | null;
  /** Its result's place among the turn's results, in the order they were committed (and streamed), from 1. */
  completed_seq: number | null;
}

export type NewToolCall = Omit<
  ToolCallRecord,
  'status' | 'output' | 'duration_ms' | 'created_at' | 'completed_at' | 'completed_seq'
>;

export interface ToolCallResult {
  id: string;
  turn_id: string;
  status: 'ok' | 'error';
  output: unknown;
  duration_ms: number;
}

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
}

export interface NewMessage {
  id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  metadata: JsonObject | null;
  turn_id: string;
  /** Set on a model's reply only; absent is null. */
  stop_reason?: StopReason | null;
  usage?: MessageUsage | null;
  tool_calls?: ToolCallSummary[] | null;
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

/** The events a webhook endpoint can subscribe to (DESIGN §15). */
export const WEBHOOK_EVENT_TYPES = [
  'session.closed',
  'session.expired',
  'turn.completed',
  'turn.failed',
  'feedback.submitted',
  'user.deleted',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A tenant's webhook endpoint; its signing secret is read only by the deliverer. */
export interface Webhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  created_at: string;
}

export interface NewWebhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  /** `whsec_` + base64. */
  secret: string;
}

/**
 * An event to deliver, written in the transaction of the change it reports: one delivery for each of its
 * tenant's endpoints subscribed to its type at that moment (none, and nothing is stored, when there are none).
 */
export interface WebhookEvent {
  /** `evt_…`: the webhook-id every attempt of every delivery of it carries. */
  id: string;
  tenant_id: string;
  type: WebhookEventType;
  /** Deliveries of an endpoint with the same key go out in the order written: a session's id, a user's id. */
  ordering_key: string;
  /** The shard whose owner delivers it: the session's, or shardOf(the user's id). */
  shard: number;
  /** The body sent, as written: JSON of `{ type, timestamp, data }`. */
  payload: string;
  created_at: string;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event's delivery to one endpoint, as listed. */
export interface WebhookDelivery {
  id: string;
  webhook_id: string;
  event_id: string;
  type: WebhookEventType;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_attempt_at: string | null;
  /** Null once delivered or failed. */
  next_attempt_at: string | null;
  created_at: string;
}

/** A delivery due now, with what sending it needs. */
export interface DueWebhookDelivery {
  id: string;
  webhook_id: string;
  event_id: string;
  type: WebhookEventType;
  ordering_key: string;
  /** The shard whose owner sends it. */
  shard: number;
  /** Attempts made so far: what a claim and a record check, so that a stale read sends nothing. */
  attempts: number;
  /** When it fell due, as read: what a claim checks. */
  next_attempt_at: string;
  url: string;
  secret: string;
  payload: string;
  created_at: string;
}

/**
 * A process takes a due delivery for one attempt: its `next_attempt_at` moves to `until` (the attempt's
 * deadline), so that no other process (nor a stale read of this one) sends it meanwhile.
 */
export interface WebhookClaim {
  id: string;
  /** As read with the due delivery: the claim fails when either changed since. */
  attempts: number;
  next_attempt_at: string;
  until: string;
}

/** The outcome of one attempt: delivered, pending again at `next_attempt_at`, or failed for good. */
export interface WebhookAttempt {
  id: string;
  /** The attempts made before this one, as claimed: the record fails when another was recorded since. */
  attempts: number;
  status: WebhookDeliveryStatus;
  /** The receiver's HTTP status; null when no answer came (refused, timed out). */
  status_code: number | null;
  at: string;
  next_attempt_at: string | null;
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
  /** Webhook events the write reports (session.closed, turn.completed, …), queued in its transaction. */
  webhookEvents?: WebhookEvent[];
}

export interface SessionWriteResult {
  messages: MessageRecord[];
  messages_count: number;
  updated_at: string;
  /** How many webhook deliveries the write queued (0 when no endpoint subscribes to its events). */
  webhook_deliveries: number;
}

/** One step of a store's versioned schema (sqlite/migrations.ts, postgres/migrations.ts). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export interface Store {
  /** Applies pending migrations; returns the schema version now in force. */
  migrate(): Promise<number>;
  /** Succeeds when the store answers a trivial query (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;

  /** Creating a tenant that exists already returns it as stored (nodes starting together both create it). */
  createTenant(id: string, name: string): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | null>;
  listTenants(): Promise<Tenant[]>;

  /** A key whose hash is stored already is not created again: the stored one is returned (bootstrap). */
  createApiKey(key: NewApiKey): Promise<ApiKeyRecord>;
  /** The key with this id, revoked or not (a session token checks the key that minted it). */
  getApiKey(id: string): Promise<ApiKeyRecord | null>;
  /** The key with this hash: only an active one unless `includeRevoked`. */
  findApiKeyByHash(hash: string, options?: { includeRevoked?: boolean }): Promise<ApiKeyRecord | null>;
  listApiKeys(tenantId?: string): Promise<ApiKeyRecord[]>;
  /** True when the key existed and was active. */
  revokeApiKey(id: string): Promise<boolean>;
  /** Counts keys that can still authenticate. */
  countActiveApiKeys(): Promise<number>;
  /**
   * A number that moves whenever a key is revoked (or changed, or deleted), by any process on this database,
   * in the transaction that does it; creating a key leaves it. What findApiKeyByHash found active after
   * reading it stays active while it reads the same (src/auth/api-key-cache.ts).
   */
  apiKeyEpoch(): Promise<number>;

  /** Throws AppError `user_reference_conflict` when the reference is taken in the tenant. */
  createUser(tenantId: string, id: string, fields: UserFields): Promise<User>;
  /** Soft-deleted users are not found. */
  getUser(tenantId: string, id: string): Promise<User | null>;
  listUsers(tenantId: string, filter: UserFilter, page: PageRequest): Promise<Page<User>>;
  /** Replaces each given field; null when the user does not exist. Reference conflicts throw as in createUser. */
  updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null>;
  /** Soft delete; frees the reference. False when there was no such user. The event reporting it is queued with it. */
  deleteUser(tenantId: string, id: string, event?: (deletedAt: string) => WebhookEvent): Promise<boolean>;

  /**
   * Stores the record and its bytes in one transaction. With a quota, the tenant's and the conversation's
   * stored files are counted in that transaction (uploads of a tenant one at a time), and one that would
   * pass it throws 413 conversation_file_quota or tenant_file_quota, storing nothing.
   */
  createFile(tenantId: string, file: NewFile, content: Buffer, quota?: FileQuota): Promise<StoredFile>;
  getFile(tenantId: string, id: string): Promise<StoredFile | null>;
  /** Newest first. */
  listFiles(tenantId: string, filter: FileFilter, page: PageRequest): Promise<Page<StoredFile>>;
  readFileContent(tenantId: string, id: string): Promise<Buffer | null>;
  /** Removes the record and its bytes; false when there was no such file. */
  deleteFile(tenantId: string, id: string): Promise<boolean>;

  /** Takes ownership of shards: bumps each epoch (fencing out earlier owners) and returns the new ones. */
  claimShards(owner: string, shards: readonly number[]): Promise<Map<number, number>>;

  /** Creates a session; throws StaleEpochError when the fence is stale. */
  createSession(tenantId: string, session: NewSession, fence: Fence): Promise<SessionRecord>;
  /** A tenant's session (any status). */
  getSession(tenantId: string, id: string): Promise<SessionRecord | null>;
  /** A session and its actor snapshot, for activation (no tenant check: the caller routes by id). */
  loadSession(id: string): Promise<{ session: SessionRecord; snapshot: string | null } | null>;
  /** Newest first. */
  listSessions(tenantId: string, filter: SessionFilter, page: PageRequest): Promise<Page<SessionRecord>>;
  /** Commits one step of a session atomically; throws StaleEpochError (writing nothing) when fenced out. */
  commitSession(write: SessionWrite): Promise<SessionWriteResult>;
  /** Ids of active sessions whose expiry has passed, oldest expiry first; only in `shards` when given. */
  sessionsDueForExpiry(now: string, limit: number, shards?: readonly number[]): Promise<string[]>;

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
  /** The tool calls a turn committed, by step and position, with their results where committed. */
  turnToolCalls(sessionId: string, turnId: string): Promise<ToolCallRecord[]>;

  /** Stores the conversation's feedback, replacing an earlier one but keeping its id. */
  upsertFeedback(
    sessionId: string,
    feedback: Omit<Feedback, 'session_id' | 'submitted_at'>,
    /** The event reporting the stored feedback, queued in its transaction. */
    event?: (stored: Feedback) => WebhookEvent,
  ): Promise<Feedback>;
  getFeedback(sessionId: string): Promise<Feedback | null>;

  /** The record of a key, expired or not (the caller decides). */
  getIdempotencyRecord(sessionId: string, key: string): Promise<IdempotencyRecord | null>;
  /** Deletes records whose retention has passed; returns how many. */
  deleteExpiredIdempotencyRecords(now: string): Promise<number>;

  createWebhook(tenantId: string, webhook: NewWebhook): Promise<Webhook>;
  /** Oldest first. */
  listWebhooks(tenantId: string): Promise<Webhook[]>;
  getWebhook(tenantId: string, id: string): Promise<Webhook | null>;
  /** Removes the endpoint and its deliveries; false when the tenant had no such endpoint. */
  deleteWebhook(tenantId: string, id: string): Promise<boolean>;
  /** An endpoint's deliveries, newest first; null when the tenant has no such endpoint. */
  listWebhookDeliveries(
    tenantId: string,
    webhookId: string,
    page: PageRequest,
  ): Promise<Page<WebhookDelivery> | null>;
  /**
   * Pending deliveries due at `now` (only in `shards` when given), earliest due first, at most `limit`. Only
   * the first pending delivery of an endpoint and ordering key is ever due: one queued behind another has no
   * `next_attempt_at` until the one before it is delivered or failed.
   */
  dueWebhookDeliveries(now: string, limit: number, shards?: readonly number[]): Promise<DueWebhookDelivery[]>;
  /** Takes a due delivery for one attempt; false when it is no longer as read (claimed, recorded, deleted). */
  claimWebhookDelivery(claim: WebhookClaim): Promise<boolean>;
  /**
   * Records an attempt: `attempts` grows by one; status, status code and times as given. Delivered or failed,
   * the next delivery of its endpoint and ordering key falls due at `at`, in the same transaction. False (and
   * nothing written) when the delivery is not pending with `attempts` as given any more.
   */
  recordWebhookAttempt(attempt: WebhookAttempt): Promise<boolean>;
  /** Deletes delivered and failed deliveries created before `before`; returns how many. */
  deleteOldWebhookDeliveries(before: string): Promise<number>;
}
