// The one Store interface. SQLite (one machine) and PostgreSQL (several) implement it and pass one
// contract suite (test/store/contract.ts). Records are shaped like the API's resources (snake_case).

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

export interface FileFilter {
  /** Case-insensitive prefix of the file name. */
  name?: string;
  mime_type?: string;
  /** ISO 8601 instants; both bounds are exclusive. */
  created_after?: string;
  created_before?: string;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /** Applies pending migrations; returns the schema version now in force. */
  migrate(): Promise<number>;
  /** Succeeds when the store answers a trivial query (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;

  createTenant(id: string, name: string): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | null>;
  listTenants(): Promise<Tenant[]>;

  createApiKey(key: NewApiKey): Promise<ApiKeyRecord>;
  /** The key with this hash: only an active one unless `includeRevoked`. */
  findApiKeyByHash(hash: string, options?: { includeRevoked?: boolean }): Promise<ApiKeyRecord | null>;
  listApiKeys(tenantId?: string): Promise<ApiKeyRecord[]>;
  /** True when the key existed and was active. */
  revokeApiKey(id: string): Promise<boolean>;
  /** Counts keys that can still authenticate. */
  countActiveApiKeys(): Promise<number>;

  /** Throws AppError `user_reference_conflict` when the reference is taken in the tenant. */
  createUser(tenantId: string, id: string, fields: UserFields): Promise<User>;
  /** Soft-deleted users are not found. */
  getUser(tenantId: string, id: string): Promise<User | null>;
  listUsers(tenantId: string, filter: UserFilter, page: PageRequest): Promise<Page<User>>;
  /** Replaces each given field; null when the user does not exist. Reference conflicts throw as in createUser. */
  updateUser(tenantId: string, id: string, fields: UserFields): Promise<User | null>;
  /** Soft delete; frees the reference. False when there was no such user. */
  deleteUser(tenantId: string, id: string): Promise<boolean>;

  /** Stores the record and its bytes in one transaction. */
  createFile(tenantId: string, file: NewFile, content: Buffer): Promise<StoredFile>;
  getFile(tenantId: string, id: string): Promise<StoredFile | null>;
  /** Newest first. */
  listFiles(tenantId: string, filter: FileFilter, page: PageRequest): Promise<Page<StoredFile>>;
  readFileContent(tenantId: string, id: string): Promise<Buffer | null>;
  /** Removes the record and its bytes; false when there was no such file. */
  deleteFile(tenantId: string, id: string): Promise<boolean>;
}

/** Cuts a `limit + 1` row fetch down to a page. */
export function toPage<T>(rows: T[], page: PageRequest): Page<T> {
  const more = rows.length > page.limit;
  return {
    items: more ? rows.slice(0, page.limit) : rows,
    next_offset: more ? page.offset + page.limit : null,
  };
}
