// Store contract: tenants and their API keys (found by hash, revoked, counted).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NewApiKey } from '../../../src/store/store.ts';
import { isoInstant, type OpenStore, unique, useStore } from './support.ts';

export function tenants(open: OpenStore): void {
  describe('tenants', () => {
    const ctx = useStore(open, { migrate: true });

    it('creating a tenant that exists already returns the stored one unchanged', async () => {
      const id = unique('t');
      const first = await ctx.store.createTenant(id, 'First');
      assert.deepEqual(await ctx.store.createTenant(id, 'Second'), first);
      assert.deepEqual(await ctx.store.getTenant(id), first);
    });

    it('a created tenant is read back by its id', async () => {
      const id = unique('t');
      const created = await ctx.store.createTenant(id, 'Acme Corp');
      assert.equal(created.id, id);
      assert.equal(created.name, 'Acme Corp');
      assert.match(created.created_at, isoInstant);
      assert.deepEqual(await ctx.store.getTenant(id), created);
    });

    it('an unknown tenant id reads as null', async () => {
      assert.equal(await ctx.store.getTenant(unique('t')), null);
    });

    it('listTenants includes every created tenant', async () => {
      const a = await ctx.store.createTenant(unique('t'), 'A');
      const b = await ctx.store.createTenant(unique('t'), 'B');
      const listed = await ctx.store.listTenants();
      assert.deepEqual(
        listed.filter((t) => t.id === a.id || t.id === b.id).sort((x, y) => x.name.localeCompare(y.name)),
        [a, b],
      );
    });
  });
}

export function apiKeys(open: OpenStore): void {
  describe('API keys', () => {
    const ctx = useStore(open, { migrate: true });

    async function newKey(tenantId: string, agents: string[] = ['*']) {
      const key: NewApiKey = {
        id: unique('key'),
        tenant_id: tenantId,
        hash: unique('hash'),
        prefix: 'pk_test',
        agents,
      };
      return { key, record: await ctx.store.createApiKey(key) };
    }

    async function tenant() {
      return (await ctx.store.createTenant(unique('t'), 'Tenant')).id;
    }

    it('a created key is described without its hash and found by that hash', async () => {
      const tenantId = await tenant();
      const { key, record } = await newKey(tenantId, ['support', 'sales']);
      assert.deepEqual(record, {
        id: key.id,
        tenant_id: tenantId,
        prefix: 'pk_test',
        agents: ['support', 'sales'],
        created_at: record.created_at,
        revoked_at: null,
      });
      assert.match(record.created_at, isoInstant);
      assert.deepEqual(await ctx.store.findApiKeyByHash(key.hash), record);
    });

    it('creating a key whose hash is stored already returns the stored key and adds none', async () => {
      const tenantId = await tenant();
      const { key, record } = await newKey(tenantId);
      assert.deepEqual(await ctx.store.createApiKey({ ...key, id: unique('key'), agents: ['x'] }), record);
      assert.deepEqual(await ctx.store.listApiKeys(tenantId), [record]);
    });

    it('a key is read by its id, revoked or not; an unknown id reads as null', async () => {
      const { key, record } = await newKey(await tenant());
      assert.deepEqual(await ctx.store.getApiKey(key.id), record);
      await ctx.store.revokeApiKey(key.id);
      assert.match((await ctx.store.getApiKey(key.id))?.revoked_at ?? '', isoInstant);
      assert.equal(await ctx.store.getApiKey(unique('key')), null);
    });

    it('the every-agent wildcard round-trips', async () => {
      const { key } = await newKey(await tenant(), ['*']);
      assert.deepEqual((await ctx.store.findApiKeyByHash(key.hash))?.agents, ['*']);
    });

    it('an unknown hash finds no key', async () => {
      assert.equal(await ctx.store.findApiKeyByHash(unique('hash')), null);
    });

    it('a revoked key is no longer found by its hash', async () => {
      const { key } = await newKey(await tenant());
      assert.equal(await ctx.store.revokeApiKey(key.id), true);
      assert.equal(await ctx.store.findApiKeyByHash(key.hash), null);
    });

    it('a revoked key is still found, with its revocation time, when revoked keys are asked for', async () => {
      const { key } = await newKey(await tenant());
      await ctx.store.revokeApiKey(key.id);
      const found = await ctx.store.findApiKeyByHash(key.hash, { includeRevoked: true });
      assert.equal(found?.id, key.id);
      assert.match(found?.revoked_at ?? '', isoInstant);
    });

    it('revoking reports true once, then false; an unknown key reports false', async () => {
      const { key } = await newKey(await tenant());
      assert.equal(await ctx.store.revokeApiKey(key.id), true);
      assert.equal(await ctx.store.revokeApiKey(key.id), false);
      assert.equal(await ctx.store.revokeApiKey(unique('key')), false);
    });

    it('a revoked key stays listed with the time of its revocation', async () => {
      const tenantId = await tenant();
      const { key, record } = await newKey(tenantId);
      await ctx.store.revokeApiKey(key.id);
      const [listed] = await ctx.store.listApiKeys(tenantId);
      assert.ok(listed);
      assert.equal(listed.id, key.id);
      assert.equal(listed.created_at, record.created_at);
      assert.match(listed.revoked_at ?? '', isoInstant);
      assert.ok((listed.revoked_at ?? '') >= record.created_at);
    });

    it('listApiKeys with a tenant lists only that tenant, without one lists every tenant', async () => {
      const t1 = await tenant();
      const t2 = await tenant();
      const a = (await newKey(t1)).record;
      const b = (await newKey(t1, ['x'])).record;
      const c = (await newKey(t2)).record;
      const byId = (x: { id: string }, y: { id: string }) => x.id.localeCompare(y.id);

      assert.deepEqual((await ctx.store.listApiKeys(t1)).sort(byId), [a, b].sort(byId));
      assert.deepEqual(await ctx.store.listApiKeys(t2), [c]);
      assert.deepEqual(await ctx.store.listApiKeys(unique('t')), []);
      const all = await ctx.store.listApiKeys();
      assert.deepEqual(all.filter((k) => [a.id, b.id, c.id].includes(k.id)).sort(byId), [a, b, c].sort(byId));
      // Never the secret, whichever way the list is asked for.
      for (const key of all) assert.equal('hash' in key, false);
    });

    it('countActiveApiKeys counts only keys that can still authenticate', async () => {
      const before = await ctx.store.countActiveApiKeys();
      const t1 = await tenant();
      const t2 = await tenant();
      const { key } = await newKey(t1);
      await newKey(t1);
      await newKey(t2);
      assert.equal(await ctx.store.countActiveApiKeys(), before + 3);
      await ctx.store.revokeApiKey(key.id);
      assert.equal(await ctx.store.countActiveApiKeys(), before + 2);
    });

    it('the key epoch moves with a revocation, and with nothing else done to keys', async () => {
      const tenantId = await tenant();
      const start = await ctx.store.apiKeyEpoch();
      const { key } = await newKey(tenantId);
      await ctx.store.findApiKeyByHash(key.hash);
      await ctx.store.findApiKeyByHash(unique('hash'));
      await ctx.store.getApiKey(key.id);
      await ctx.store.listApiKeys(tenantId);
      await ctx.store.countActiveApiKeys();
      assert.equal(await ctx.store.apiKeyEpoch(), start, 'creating and reading keys leave it');

      assert.equal(await ctx.store.revokeApiKey(key.id), true);
      const revoked = await ctx.store.apiKeyEpoch();
      assert.notEqual(revoked, start, 'a revocation moves it');
      assert.equal(await ctx.store.apiKeyEpoch(), revoked, 'reading it leaves it');

      assert.equal(await ctx.store.revokeApiKey(key.id), false);
      assert.equal(await ctx.store.revokeApiKey(unique('key')), false);
      assert.equal(await ctx.store.apiKeyEpoch(), revoked, 'a revocation that revokes nothing leaves it');
    });
  });
}
