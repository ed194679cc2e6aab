// The cache of authenticated API keys on a real store: which presentations reach the store, and that no
// lookup older than a revocation another request has seen is kept.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ApiKeyCache } from '../../src/auth/api-key-cache.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../src/auth/api-keys.ts';
import { newId } from '../../src/ids.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { ApiKeyRecord } from '../../src/store/store.ts';

describe('the cache of authenticated API keys', () => {
  let store: SqliteStore;
  /** The store as the cache sees it, counting the lookups that reach it; `during` runs inside the next one. */
  let lookups: number;
  let during: (() => Promise<void>) | undefined;
  const seen = {
    apiKeyEpoch: () => store.apiKeyEpoch(),
    findApiKeyByHash: async (hash: string) => {
      lookups++;
      const found = await store.findApiKeyByHash(hash);
      const then = during;
      during = undefined;
      await then?.();
      return found;
    },
  };

  beforeEach(async () => {
    store = new SqliteStore(':memory:');
    await store.migrate();
    await store.createTenant('t1', 'Acme');
    lookups = 0;
    during = undefined;
  });
  afterEach(() => store.close());

  async function newKey(): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = generateApiKey();
    const record = await store.createApiKey({
      id: newId('key'),
      tenant_id: 't1',
      hash: hashApiKey(key),
      prefix: apiKeyPrefix(key),
      agents: ['*'],
    });
    return { key, record };
  }

  it('answers a repeated key without a lookup, and looks it up again after any revocation', async () => {
    const cache = new ApiKeyCache(seen);
    const { key, record } = await newKey();
    const doomed = await newKey();
    assert.deepEqual(await cache.find(key), record);
    assert.deepEqual(await cache.find(key), record);
    assert.equal(lookups, 1);
    await store.revokeApiKey(doomed.record.id);
    assert.deepEqual(await cache.find(key), record);
    assert.equal(lookups, 2);
  });

  it('looks an unknown key up every time it is presented', async () => {
    const cache = new ApiKeyCache(seen);
    assert.equal(await cache.find('pk_unknown'), null);
    assert.equal(await cache.find('pk_unknown'), null);
    assert.equal(lookups, 2);
  });

  it('does not keep a key found before a revocation that another request has seen meanwhile', async () => {
    const cache = new ApiKeyCache(seen);
    const { key, record } = await newKey();
    const other = await newKey();
    // The lookup of `key` finds it active; then, before it returns, the key is revoked and a request with
    // another key reads the moved epoch. The first answer is concurrent with the revocation, either is
    // right; what comes after must be the refusal.
    during = async () => {
      await store.revokeApiKey(record.id);
      assert.deepEqual(await cache.find(other.key), other.record);
    };
    assert.deepEqual(await cache.find(key), record);
    assert.equal(await cache.find(key), null);
  });

  it('forgets the oldest key past its bound, which then authenticates through a lookup', async () => {
    const cache = new ApiKeyCache(seen, 2);
    const keys = [await newKey(), await newKey(), await newKey()];
    for (const { key } of keys) await cache.find(key);
    assert.equal(lookups, 3);
    assert.deepEqual(await cache.find(keys[2]?.key ?? ''), keys[2]?.record);
    assert.equal(lookups, 3);
    assert.deepEqual(await cache.find(keys[0]?.key ?? ''), keys[0]?.record);
    assert.equal(lookups, 4);
  });
});
