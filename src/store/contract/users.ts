// The Store's users: a tenant's end users, found by id or by their reference, deleted softly.
import type { JsonObject, Page, PageRequest } from './common.ts';
import type { WebhookEvent } from './webhooks.ts';

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

export interface UserStore {
  /** Throws AppError `user_reference_conflict` when the reference is taken in the tenant. */
  createUser(tenantId: string, id: string, fields: UserFields): Promise<User>;
  /** Soft-deleted users are not found. */
  getUser(tenantId: string, id: string): Promise<User | null>;
  listUsers(tenantId: string, filter: UserFilter, page: PageRequest): Promise<Page<User>>;
  /** Replaces each given field; null when the user does not exist. Reference conflicts throw as in createUser. */
  updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null>;
  /** Soft delete; frees the reference. False when there was no such user. The event reporting it is queued with it. */
  deleteUser(tenantId: string, id: string, event?: (deletedAt: string) => WebhookEvent): Promise<boolean>;
}
