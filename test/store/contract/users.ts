// Store contract: end-users: fields, references unique among live users, soft delete, update, list filters.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store, User } from '../../../src/store/store.ts';
import { isoInstant, isReferenceConflict, type OpenStore, pastInstant, unique, useStore } from './support.ts';

export function users(open: OpenStore): void {
  describe('users', () => {
    const ctx = useStore(open, { migrate: true });

    async function tenant() {
      return (await ctx.store.createTenant(unique('t'), 'Tenant')).id;
    }

    const full = {
      reference: 'crm:42',
      name: 'Ann Example',
      email: 'Ann@Example.com',
      phone: '+49 30 1234567',
      metadata: { plan: 'pro', tags: ['a', 'b'], nested: { n: 1, ok: true, none: null } },
      info: { language: 'de', note: 'prefers email' },
    };

    it('a user created with every field reads back identically', async () => {
      const tenantId = await tenant();
      const id = unique('usr');
      const created = await ctx.store.createUser(tenantId, id, full);
      assert.deepEqual(created, {
        id,
        created_at: created.created_at,
        updated_at: created.updated_at,
        ...full,
      });
      assert.match(created.created_at, isoInstant);
      assert.equal(created.updated_at, created.created_at);
      assert.deepEqual(await ctx.store.getUser(tenantId, id), created);
    });

    it('a user created with no fields has null contact fields and empty objects', async () => {
      const tenantId = await tenant();
      const id = unique('usr');
      const created = await ctx.store.createUser(tenantId, id, {});
      const expected: User = {
        id,
        created_at: created.created_at,
        updated_at: created.created_at,
        reference: null,
        name: null,
        email: null,
        phone: null,
        metadata: {},
        info: {},
      };
      assert.deepEqual(created, expected);
      assert.deepEqual(await ctx.store.getUser(tenantId, id), expected);
    });

    it('a reference held by a live user of the tenant cannot be taken again', async () => {
      const tenantId = await tenant();
      await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:1' });
      const id = unique('usr');
      await assert.rejects(
        () => ctx.store.createUser(tenantId, id, { reference: 'crm:1' }),
        isReferenceConflict,
      );
      assert.equal(await ctx.store.getUser(tenantId, id), null, 'the refused user was not stored');
    });

    it('the same reference may be used in another tenant', async () => {
      const t1 = await tenant();
      const t2 = await tenant();
      await ctx.store.createUser(t1, unique('usr'), { reference: 'crm:1' });
      const other = await ctx.store.createUser(t2, unique('usr'), { reference: 'crm:1' });
      assert.equal(other.reference, 'crm:1');
    });

    it('users without a reference never conflict with each other', async () => {
      const tenantId = await tenant();
      await ctx.store.createUser(tenantId, unique('usr'), {});
      await ctx.store.createUser(tenantId, unique('usr'), { reference: null });
      const page = await ctx.store.listUsers(tenantId, {}, { limit: 10, offset: 0 });
      assert.equal(page.items.length, 2);
    });

    it('deleting a user frees its reference', async () => {
      const tenantId = await tenant();
      const first = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:1' });
      assert.equal(await ctx.store.deleteUser(tenantId, first.id), true);
      const second = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:1' });
      assert.equal(second.reference, 'crm:1');
      // A second soft-deleted holder must not block the next one either.
      assert.equal(await ctx.store.deleteUser(tenantId, second.id), true);
      await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:1' });
    });

    it('a deleted user is not found, and deleting it again reports false', async () => {
      const tenantId = await tenant();
      const user = await ctx.store.createUser(tenantId, unique('usr'), { name: 'Gone' });
      assert.equal(await ctx.store.deleteUser(tenantId, user.id), true);
      assert.equal(await ctx.store.getUser(tenantId, user.id), null);
      assert.equal(await ctx.store.deleteUser(tenantId, user.id), false);
      assert.equal(await ctx.store.deleteUser(tenantId, unique('usr')), false);
    });

    it("a tenant can neither see nor delete another tenant's user", async () => {
      const owner = await tenant();
      const stranger = await tenant();
      const user = await ctx.store.createUser(owner, unique('usr'), { reference: 'crm:1' });
      assert.equal(await ctx.store.getUser(stranger, user.id), null);
      assert.equal(await ctx.store.deleteUser(stranger, user.id), false);
      assert.deepEqual(await ctx.store.getUser(owner, user.id), user, 'the owner still has the user');
    });

    describe('updateUser', () => {
      it('replaces only the given fields', async () => {
        const tenantId = await tenant();
        const user = await ctx.store.createUser(tenantId, unique('usr'), full);
        const updated = await ctx.store.updateUser(tenantId, user.id, {
          name: 'Ann Other',
          metadata: { b: 2 },
        });
        assert.ok(updated);
        // metadata is replaced as a whole, not merged.
        assert.deepEqual(
          { ...updated, updated_at: user.updated_at },
          { ...user, name: 'Ann Other', metadata: { b: 2 } },
        );
        assert.deepEqual(await ctx.store.getUser(tenantId, user.id), updated);
      });

      it('null clears a field', async () => {
        const tenantId = await tenant();
        const user = await ctx.store.createUser(tenantId, unique('usr'), full);
        const updated = await ctx.store.updateUser(tenantId, user.id, {
          reference: null,
          email: null,
          phone: null,
        });
        assert.ok(updated);
        assert.equal(updated.reference, null);
        assert.equal(updated.email, null);
        assert.equal(updated.phone, null);
        assert.equal(updated.name, full.name);
        assert.deepEqual(await ctx.store.getUser(tenantId, user.id), updated);
        // A cleared reference is free again.
        await ctx.store.createUser(tenantId, unique('usr'), { reference: full.reference });
      });

      it('moves updated_at forward and keeps created_at', async () => {
        const tenantId = await tenant();
        const user = await ctx.store.createUser(tenantId, unique('usr'), {});
        await pastInstant(user.updated_at);
        const updated = await ctx.store.updateUser(tenantId, user.id, { name: 'Later' });
        assert.ok(updated);
        assert.equal(updated.created_at, user.created_at);
        assert.match(updated.updated_at, isoInstant);
        assert.ok(updated.updated_at > user.updated_at, `${updated.updated_at} > ${user.updated_at}`);
      });

      it('refuses a reference held by another live user of the tenant and changes nothing', async () => {
        const tenantId = await tenant();
        await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:1' });
        const user = await ctx.store.createUser(tenantId, unique('usr'), {
          reference: 'crm:2',
          name: 'Bo',
        });
        await assert.rejects(
          () => ctx.store.updateUser(tenantId, user.id, { reference: 'crm:1', name: 'Changed' }),
          isReferenceConflict,
        );
        assert.deepEqual(await ctx.store.getUser(tenantId, user.id), user);
      });

      it('accepts a reference held only by a deleted user, or by the user itself', async () => {
        const tenantId = await tenant();
        const gone = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:1' });
        await ctx.store.deleteUser(tenantId, gone.id);
        const user = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:2' });
        assert.equal(
          (await ctx.store.updateUser(tenantId, user.id, { reference: 'crm:1' }))?.reference,
          'crm:1',
        );
        assert.equal(
          (await ctx.store.updateUser(tenantId, user.id, { reference: 'crm:1' }))?.reference,
          'crm:1',
        );
      });

      it("returns null for an unknown, a deleted or another tenant's user", async () => {
        const tenantId = await tenant();
        const stranger = await tenant();
        assert.equal(await ctx.store.updateUser(tenantId, unique('usr'), { name: 'x' }), null);
        const gone = await ctx.store.createUser(tenantId, unique('usr'), { name: 'Gone' });
        await ctx.store.deleteUser(tenantId, gone.id);
        assert.equal(await ctx.store.updateUser(tenantId, gone.id, { name: 'x' }), null);
        const user = await ctx.store.createUser(tenantId, unique('usr'), { name: 'Mine' });
        assert.equal(await ctx.store.updateUser(stranger, user.id, { name: 'Stolen' }), null);
        assert.equal((await ctx.store.getUser(tenantId, user.id))?.name, 'Mine');
      });
    });

    describe('listUsers', () => {
      /** Creates users one millisecond apart, so that "newest first" has one right answer. */
      async function createUsers(tenantId: string, fields: Parameters<Store['createUser']>[2][]) {
        const users: User[] = [];
        for (const f of fields) {
          const previous = users.at(-1);
          if (previous) await pastInstant(previous.created_at);
          users.push(await ctx.store.createUser(tenantId, unique('usr'), f));
        }
        return users;
      }

      const ids = (items: { id: string }[]) => items.map((u) => u.id);

      it('lists the live users of the tenant, newest first', async () => {
        const tenantId = await tenant();
        const [a, b, c] = await createUsers(tenantId, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
        assert.ok(a && b && c);
        await ctx.store.deleteUser(tenantId, b.id);
        const page = await ctx.store.listUsers(tenantId, {}, { limit: 10, offset: 0 });
        assert.deepEqual(page, { items: [c, a], next_offset: null });
      });

      it('lists only users of the asking tenant', async () => {
        const t1 = await tenant();
        const t2 = await tenant();
        const [mine] = await createUsers(t1, [{ reference: 'crm:1', email: 'a@example.com' }]);
        await createUsers(t2, [{ reference: 'crm:1', email: 'a@example.com' }]);
        assert.ok(mine);
        const page = { limit: 10, offset: 0 };
        assert.deepEqual(ids((await ctx.store.listUsers(t1, {}, page)).items), [mine.id]);
        assert.deepEqual(ids((await ctx.store.listUsers(t1, { reference: 'crm:1' }, page)).items), [mine.id]);
        assert.deepEqual(ids((await ctx.store.listUsers(t1, { email: 'a@example.com' }, page)).items), [
          mine.id,
        ]);
        assert.deepEqual(await ctx.store.listUsers(unique('t'), {}, page), {
          items: [],
          next_offset: null,
        });
      });

      it('filters by exact reference', async () => {
        const tenantId = await tenant();
        const [, b] = await createUsers(tenantId, [{ reference: 'crm:1' }, { reference: 'crm:10' }, {}]);
        assert.ok(b);
        const page = { limit: 10, offset: 0 };
        assert.deepEqual(ids((await ctx.store.listUsers(tenantId, { reference: 'crm:10' }, page)).items), [
          b.id,
        ]);
        assert.deepEqual((await ctx.store.listUsers(tenantId, { reference: 'crm' }, page)).items, []);
        assert.deepEqual((await ctx.store.listUsers(tenantId, { reference: 'CRM:10' }, page)).items, []);
      });

      it('filters by email ignoring case', async () => {
        const tenantId = await tenant();
        const [a, , c] = await createUsers(tenantId, [
          { email: 'Ann@Example.com' },
          { email: 'bo@example.com' },
          { email: 'ann@example.COM' },
        ]);
        assert.ok(a && c);
        const page = await ctx.store.listUsers(
          tenantId,
          { email: 'ANN@example.com' },
          { limit: 10, offset: 0 },
        );
        assert.deepEqual(ids(page.items), [c.id, a.id]);
        assert.equal(page.items[1]?.email, 'Ann@Example.com', 'the stored spelling is kept');
      });

      it('combines filters, and ignores filters given as undefined', async () => {
        const tenantId = await tenant();
        const [a, b] = await createUsers(tenantId, [
          { reference: 'crm:1', email: 'a@example.com' },
          { reference: 'crm:2', email: 'a@example.com' },
        ]);
        assert.ok(a && b);
        const page = { limit: 10, offset: 0 };
        const both = await ctx.store.listUsers(
          tenantId,
          { reference: 'crm:2', email: 'A@example.com' },
          page,
        );
        assert.deepEqual(ids(both.items), [b.id]);
        const none = await ctx.store.listUsers(
          tenantId,
          { reference: 'crm:1', email: 'b@example.com' },
          page,
        );
        assert.deepEqual(none.items, []);
        // The HTTP layer passes absent query parameters as undefined properties.
        const all = await ctx.store.listUsers(tenantId, { reference: undefined, email: undefined }, page);
        assert.deepEqual(ids(all.items), [b.id, a.id]);
      });

      it('pages carry next_offset until no item follows, even after a full last page', async () => {
        const tenantId = await tenant();
        const users = (await createUsers(tenantId, [{}, {}, {}, {}, {}])).reverse();
        const list = (limit: number, offset: number) => ctx.store.listUsers(tenantId, {}, { limit, offset });

        assert.deepEqual(await list(2, 0), { items: users.slice(0, 2), next_offset: 2 });
        assert.deepEqual(await list(2, 2), { items: users.slice(2, 4), next_offset: 4 });
        assert.deepEqual(await list(2, 4), { items: users.slice(4), next_offset: null });
        // Exactly the last items: a full page, yet nothing follows.
        assert.deepEqual(await list(3, 2), { items: users.slice(2), next_offset: null });
        assert.deepEqual(await list(5, 0), { items: users, next_offset: null });
        assert.deepEqual(await list(10, 0), { items: users, next_offset: null });
        assert.deepEqual(await list(2, 5), { items: [], next_offset: null });
        assert.deepEqual(await list(2, 50), { items: [], next_offset: null });
      });
    });
  });
}
