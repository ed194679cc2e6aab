// A Store assembled from parts, one per resource. Each store (SQLite, PostgreSQL) supplies its parts
// (sqlite/users.ts, postgres/users.ts, …) and the methods that belong to its connection; this class answers
// the rest of the contract from the part that holds each method, so neither store repeats that forwarding.
import type { Store } from './store.ts';

export type TenantPart = Pick<
  Store,
  | 'createTenant'
  | 'getTenant'
  | 'listTenants'
  | 'createApiKey'
  | 'findApiKeyByHash'
  | 'getApiKey'
  | 'listApiKeys'
  | 'revokeApiKey'
  | 'countActiveApiKeys'
  | 'apiKeyEpoch'
>;
export type UserPart = Pick<Store, 'createUser' | 'getUser' | 'listUsers' | 'updateUser' | 'deleteUser'>;
export type FilePart = Pick<Store, 'createFile' | 'getFile' | 'listFiles' | 'readFileContent' | 'deleteFile'>;
export type SessionPart = Pick<
  Store,
  'claimShards' | 'createSession' | 'getSession' | 'loadSession' | 'listSessions' | 'sessionsDueForExpiry'
>;
export type MessagePart = Pick<
  Store,
  | 'getMessage'
  | 'listMessages'
  | 'recentMessages'
  | 'turnMessages'
  | 'turnToolCalls'
  | 'upsertFeedback'
  | 'getFeedback'
  | 'getIdempotencyRecord'
  | 'deleteExpiredIdempotencyRecords'
>;
export type WebhookPart = Pick<
  Store,
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'deleteWebhook'
  | 'listWebhookDeliveries'
  | 'dueWebhookDeliveries'
  | 'claimWebhookDelivery'
  | 'recordWebhookAttempt'
  | 'deleteOldWebhookDeliveries'
>;

export interface StoreParts {
  tenants: TenantPart;
  users: UserPart;
  files: FilePart;
  sessions: SessionPart;
  messages: MessagePart;
  webhooks: WebhookPart;
}

/** The modules of a store's parts (sqlite/users.ts, …), each exporting `part`, built on the store's handle. */
export type PartModules<Handle> = { [K in keyof StoreParts]: { part(handle: Handle): StoreParts[K] } };

export function partsOn<Handle>(handle: Handle, modules: PartModules<Handle>): StoreParts {
  return {
    tenants: modules.tenants.part(handle),
    users: modules.users.part(handle),
    files: modules.files.part(handle),
    sessions: modules.sessions.part(handle),
    messages: modules.messages.part(handle),
    webhooks: modules.webhooks.part(handle),
  };
}

type Args<K extends keyof Store> = Parameters<Store[K]>;

export abstract class ComposedStore implements Store {
  protected abstract readonly parts: StoreParts;

  abstract migrate(): ReturnType<Store['migrate']>;
  abstract ping(): ReturnType<Store['ping']>;
  abstract close(): ReturnType<Store['close']>;
  /** The connection decides how writes are grouped into transactions (SQLite groups them; see sqlite/store.ts). */
  abstract commitSession(...args: Args<'commitSession'>): ReturnType<Store['commitSession']>;

  createTenant(...args: Args<'createTenant'>) {
    return this.parts.tenants.createTenant(...args);
  }
  getTenant(...args: Args<'getTenant'>) {
    return this.parts.tenants.getTenant(...args);
  }
  listTenants() {
    return this.parts.tenants.listTenants();
  }
  createApiKey(...args: Args<'createApiKey'>) {
    return this.parts.tenants.createApiKey(...args);
  }
  findApiKeyByHash(...args: Args<'findApiKeyByHash'>) {
    return this.parts.tenants.findApiKeyByHash(...args);
  }
  getApiKey(...args: Args<'getApiKey'>) {
    return this.parts.tenants.getApiKey(...args);
  }
  listApiKeys(...args: Args<'listApiKeys'>) {
    return this.parts.tenants.listApiKeys(...args);
  }
  revokeApiKey(...args: Args<'revokeApiKey'>) {
    return this.parts.tenants.revokeApiKey(...args);
  }
  countActiveApiKeys() {
    return this.parts.tenants.countActiveApiKeys();
  }
  apiKeyEpoch() {
    return this.parts.tenants.apiKeyEpoch();
  }

  createUser(...args: Args<'createUser'>) {
    return this.parts.users.createUser(...args);
  }
  getUser(...args: Args<'getUser'>) {
    return this.parts.users.getUser(...args);
  }
  listUsers(...args: Args<'listUsers'>) {
    return this.parts.users.listUsers(...args);
  }
  updateUser(...args: Args<'updateUser'>) {
    return this.parts.users.updateUser(...args);
  }
  deleteUser(...args: Args<'deleteUser'>) {
    return this.parts.users.deleteUser(...args);
  }

  createFile(...args: Args<'createFile'>) {
    return this.parts.files.createFile(...args);
  }
  getFile(...args: Args<'getFile'>) {
    return this.parts.files.getFile(...args);
  }
  listFiles(...args: Args<'listFiles'>) {
    return this.parts.files.listFiles(...args);
  }
  readFileContent(...args: Args<'readFileContent'>) {
    return this.parts.files.readFileContent(...args);
  }
  deleteFile(...args: Args<'deleteFile'>) {
    return this.parts.files.deleteFile(...args);
  }

  claimShards(...args: Args<'claimShards'>) {
    return this.parts.sessions.claimShards(...args);
  }
  createSession(...args: Args<'createSession'>) {
    return this.parts.sessions.createSession(...args);
  }
  getSession(...args: Args<'getSession'>) {
    return this.parts.sessions.getSession(...args);
  }
  loadSession(...args: Args<'loadSession'>) {
    return this.parts.sessions.loadSession(...args);
  }
  listSessions(...args: Args<'listSessions'>) {
    return this.parts.sessions.listSessions(...args);
  }
  sessionsDueForExpiry(...args: Args<'sessionsDueForExpiry'>) {
    return this.parts.sessions.sessionsDueForExpiry(...args);
  }

  getMessage(...args: Args<'getMessage'>) {
    return this.parts.messages.getMessage(...args);
  }
  listMessages(...args: Args<'listMessages'>) {
    return this.parts.messages.listMessages(...args);
  }
  recentMessages(...args: Args<'recentMessages'>) {
    return this.parts.messages.recentMessages(...args);
  }
  turnMessages(...args: Args<'turnMessages'>) {
    return this.parts.messages.turnMessages(...args);
  }
  turnToolCalls(...args: Args<'turnToolCalls'>) {
    return this.parts.messages.turnToolCalls(...args);
  }
  upsertFeedback(...args: Args<'upsertFeedback'>) {
    return this.parts.messages.upsertFeedback(...args);
  }
  getFeedback(...args: Args<'getFeedback'>) {
    return this.parts.messages.getFeedback(...args);
  }
  getIdempotencyRecord(...args: Args<'getIdempotencyRecord'>) {
    return this.parts.messages.getIdempotencyRecord(...args);
  }
  deleteExpiredIdempotencyRecords(...args: Args<'deleteExpiredIdempotencyRecords'>) {
    return this.parts.messages.deleteExpiredIdempotencyRecords(...args);
  }

  createWebhook(...args: Args<'createWebhook'>) {
    return this.parts.webhooks.createWebhook(...args);
  }
  listWebhooks(...args: Args<'listWebhooks'>) {
    return this.parts.webhooks.listWebhooks(...args);
  }
  getWebhook(...args: Args<'getWebhook'>) {
    return this.parts.webhooks.getWebhook(...args);
  }
  deleteWebhook(...args: Args<'deleteWebhook'>) {
    return this.parts.webhooks.deleteWebhook(...args);
  }
  listWebhookDeliveries(...args: Args<'listWebhookDeliveries'>) {
    return this.parts.webhooks.listWebhookDeliveries(...args);
  }
  dueWebhookDeliveries(...args: Args<'dueWebhookDeliveries'>) {
    return this.parts.webhooks.dueWebhookDeliveries(...args);
  }
  claimWebhookDelivery(...args: Args<'claimWebhookDelivery'>) {
    return this.parts.webhooks.claimWebhookDelivery(...args);
  }
  recordWebhookAttempt(...args: Args<'recordWebhookAttempt'>) {
    return this.parts.webhooks.recordWebhookAttempt(...args);
  }
  deleteOldWebhookDeliveries(...args: Args<'deleteOldWebhookDeliveries'>) {
    return this.parts.webhooks.deleteOldWebhookDeliveries(...args);
  }
}
