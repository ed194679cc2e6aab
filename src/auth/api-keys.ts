// API keys: `pk_` + 32 random bytes in base62. Only their SHA-256 is stored; the key is shown once.
import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../ids.ts';
import type { Store } from '../store/store.ts';

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
 * For development and containers: makes `key` a valid key of tenant `default` (every agent),
 * creating the tenant when absent. Does nothing when the key already exists.
 */
export async function ensureBootstrapKey(store: Store, key: string): Promise<void> {
  const hash = hashApiKey(key);
  if (await store.findApiKeyByHash(hash)) return;
  if (!(await store.getTenant('default'))) await store.createTenant('default', 'Default tenant');
  await store.createApiKey({
    id: newId('key'),
    tenant_id: 'default',
    hash,
    prefix: apiKeyPrefix(key),
    agents: ['*'],
  });
}
