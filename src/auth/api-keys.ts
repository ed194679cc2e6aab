// API keys: `pk_` + 32 random bytes in base62. Only their SHA-256 is stored; the key is shown once.
import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../ids.ts';
import type { ApiKeyRecord, Store } from '../store/store.ts';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Scope of a key over agents: every agent, or a list of agent ids. */
export type AgentScope = readonly string[];

export function generateApiKey(): string {
  let n = BigInt(`0x${randomBytes(32).toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = base62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return `pk_${out.padStart(43, '0')}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** What `keys list` shows of a key: enough to recognise it, never enough to use it. */
export function apiKeyPrefix(key: string): string {
  return `${key.slice(0, 9)}…`;
}

export function scopeAllows(scope: AgentScope, agentId: string): boolean {
  return scope.includes('*') || scope.includes(agentId);
}

/**
 * For development and containers: makes `key` a key of tenant `default` (every agent), creating the
 * tenant when absent. A key that exists already, even revoked, is left as it is: revocation must
 * survive a restart with the same environment. Nodes starting together may all find nothing: creating the
 * tenant and the key is idempotent at the store, so each gets the one record. Returns the key record.
 */
export async function ensureBootstrapKey(store: Store, key: string): Promise<ApiKeyRecord> {
  const hash = hashApiKey(key);
  const existing = await store.findApiKeyByHash(hash, { includeRevoked: true });
  if (existing) return existing;
  if (!(await store.getTenant('default'))) await store.createTenant('default', 'Default tenant');
  return store.createApiKey({
    id: newId('key'),
    tenant_id: 'default',
    hash,
    prefix: apiKeyPrefix(key),
    agents: ['*'],
  });
}
