// Store contract: migrating, answering ping, closing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type OpenStore, unique, useStore } from './support.ts';

export function lifecycle(open: OpenStore): void {
  describe('lifecycle', () => {
    const ctx = useStore(open, { migrate: false });

    it('migrate applies the schema and returns the version now in force', async () => {
      const version = await ctx.store.migrate();
      assert.ok(Number.isInteger(version) && version >= 1, `version ${version}`);
      // The schema is usable: a write and a read succeed.
      const id = unique('t');
      await ctx.store.createTenant(id, 'Acme');
      assert.equal((await ctx.store.getTenant(id))?.name, 'Acme');
    });

    it('running migrate again is harmless and returns the same version', async () => {
      const first = await ctx.store.migrate();
      const id = unique('t');
      await ctx.store.createTenant(id, 'Acme');
      assert.equal(await ctx.store.migrate(), first);
      assert.equal(await ctx.store.migrate(), first);
      assert.equal((await ctx.store.getTenant(id))?.name, 'Acme', 'data survives a repeated migration');
    });

    it('ping succeeds on an open store', async () => {
      await ctx.store.migrate();
      await ctx.store.ping();
    });

    it('a closed store no longer answers ping', async () => {
      await ctx.store.migrate();
      await ctx.store.ping();
      await ctx.closeNow();
      await assert.rejects(() => ctx.store.ping());
    });
  });
}
