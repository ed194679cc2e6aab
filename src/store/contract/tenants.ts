// The Store's tenants and API keys: what they keep and the operations on them.
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

export interface TenantStore {
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
}
