// The one Store interface. SQLite (one machine) and PostgreSQL (several) implement it and pass one
// contract suite (test/store/contract/). Records are shaped like the API's resources (snake_case).
// Each resource's operations and records are in contract/ (sessions, messages, tool calls, users, files,
// tenants and keys, webhooks); this module joins them into Store and re-exports them, so that the rest of
// the service imports the store from here.
import type { FileStore } from './contract/files.ts';
import type { MessageStore } from './contract/messages.ts';
import type { SessionStore } from './contract/sessions.ts';
import type { TenantStore } from './contract/tenants.ts';
import type { ToolCallStore } from './contract/tool-calls.ts';
import type { UsageStore } from './contract/usage.ts';
import type { UserStore } from './contract/users.ts';
import type { WebhookStore } from './contract/webhooks.ts';

// The wire's enumerations, which records share.
export {
  SESSION_STATUSES,
  type SessionStatus,
  STOP_REASONS,
  type StopReason,
  WEBHOOK_EVENT_TYPES,
  type WebhookEventType,
} from '#schemas';
export type * from './contract/common.ts';
export { fullUsage } from './contract/common.ts';
export type * from './contract/files.ts';
export type * from './contract/messages.ts';
export type * from './contract/sessions.ts';
export { StaleEpochError } from './contract/sessions.ts';
export type * from './contract/tenants.ts';
export type * from './contract/tool-calls.ts';
export { ApprovalConflictError } from './contract/tool-calls.ts';
export type * from './contract/usage.ts';
export { noTotals, USAGE_GROUPS } from './contract/usage.ts';
export type * from './contract/users.ts';
export type * from './contract/webhooks.ts';
export { WEBHOOK_ENDPOINT_FAILING, WEBHOOK_OUTBOX_FULL } from './contract/webhooks.ts';

/** One step of a store's versioned schema (sqlite/migrations.ts, postgres/migrations.ts). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** What a store does as a whole rather than for one resource. */
export interface StoreLifecycle {
  /** Applies pending migrations; returns the schema version now in force. */
  migrate(): Promise<number>;
  /** Succeeds when the store answers a trivial query (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface Store
  extends StoreLifecycle,
    TenantStore,
    UserStore,
    FileStore,
    SessionStore,
    MessageStore,
    ToolCallStore,
    WebhookStore,
    UsageStore {}
