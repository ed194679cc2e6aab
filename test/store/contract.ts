// The Store contract: one suite that every Store implementation must pass, so that SQLite and PostgreSQL
// behave alike behind the API. An implementation's test file calls storeContract with a factory.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SHARD_COUNT, shardOf } from '../../src/cluster/shard.ts';
import { AppError } from '../../src/errors.ts';
import { newId } from '../../src/ids.ts';
import {
  type ContentBlock,
  type Feedback,
  type Fence,
  type FileFilter,
  type IdempotencyRecord,
  type MessageRecord,
  type NewApiKey,
  type NewFile,
  type NewMessage,
  type NewSession,
  type SessionFilter,
  type SessionRecord,
  StaleEpochError,
  type Store,
  type StoredFile,
  type User,
} from '../../src/store/store.ts';

/**
 * Opens a store for one test. It may share its database with other tests (ids are unique per test and
 * global counts are compared before and after), and may or may not be migrated yet: the suite migrates.
 * The suite closes the store before calling `cleanup`.
 */
export type OpenStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

const isoInstant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Unique per call, so that tests sharing one database never see each other's rows. */
const unique = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the clock has passed `instant`: the store stamps records with millisecond precision, so
 * ordering and exclusive-bound assertions need records that were not created within the same millisecond.
 */
async function pastInstant(instant: string): Promise<void> {
  const target = Date.parse(instant);
  while (Date.now() <= target) await sleep(1);
}

const isReferenceConflict = (err: unknown) =>
  err instanceof AppError && err.code === 'user_reference_conflict' && err.statusCode === 409;

export function storeContract(name: string, open: OpenStore): void {
  /** Registers hooks that give each test of the enclosing describe a fresh store. */
  function useStore(options: { migrate: boolean }) {
    const context = {
      store: undefined as unknown as Store,
      closed: false,
      /** Closes now, for tests about a closed store; the hook then does not close again. */
      async closeNow() {
        context.closed = true;
        await context.store.close();
      },
    };
    let cleanup: (() => Promise<void>) | undefined;
    beforeEach(async () => {
      const opened = await open();
      context.store = opened.store;
      context.closed = false;
      cleanup = opened.cleanup;
      if (options.migrate) await context.store.migrate();
    });
    afterEach(async () => {
      try {
        if (!context.closed) await context.store.close();
      } finally {
        await cleanup?.();
        cleanup = undefined;
      }
    });
    return context;
  }

  /** Creating sessions in a describe's store: a session needs a tenant and the current fence of its shard. */
  function sessionHelpers(ctx: { store: Store }) {
    /** Takes ownership of a shard as a new node would, and returns its fence. */
    async function claim(shard: number): Promise<Fence> {
      const epochs = await ctx.store.claimShards(unique('node'), [shard]);
      const epoch = epochs.get(shard);
      assert.ok(epoch !== undefined, `an epoch for shard ${shard}`);
      return { shard, epoch };
    }

    const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

    function newSession(fields: Partial<NewSession> = {}): NewSession {
      const id = fields.id ?? newId('ses');
      return {
        id,
        agent_id: 'support',
        user_id: null,
        shard: shardOf(id),
        context: {},
        metadata: {},
        expires_at: inAnHour(),
        snapshot: JSON.stringify({ status: 'active', value: 'idle', context: { sessionId: id } }),
        ...fields,
      };
    }

    /** Creates a session under a freshly claimed fence of its shard. */
    async function createSession(tenantId: string, fields: Partial<NewSession> = {}) {
      const session = newSession(fields);
      const fence = await claim(session.shard);
      const record = await ctx.store.createSession(tenantId, session, fence);
      return { session, record, fence };
    }

    return { claim, inAnHour, newSession, createSession };
  }

  describe(`${name} meets the Store contract`, () => {
    describe('lifecycle', () => {
      const ctx = useStore({ migrate: false });

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

    describe('tenants', () => {
      const ctx = useStore({ migrate: true });

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

    describe('API keys', () => {
      const ctx = useStore({ migrate: true });

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
        assert.deepEqual(
          all.filter((k) => [a.id, b.id, c.id].includes(k.id)).sort(byId),
          [a, b, c].sort(byId),
        );
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
    });

    describe('users', () => {
      const ctx = useStore({ migrate: true });

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
          assert.deepEqual(ids((await ctx.store.listUsers(t1, { reference: 'crm:1' }, page)).items), [
            mine.id,
          ]);
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
          const list = (limit: number, offset: number) =>
            ctx.store.listUsers(tenantId, {}, { limit, offset });

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

    describe('files', () => {
      const ctx = useStore({ migrate: true });
      const { createSession } = sessionHelpers(ctx);

      async function tenant() {
        return (await ctx.store.createTenant(unique('t'), 'Tenant')).id;
      }

      function newFile(fields: Partial<NewFile> = {}): NewFile {
        return {
          id: unique('file'),
          name: 'notes.txt',
          mime_type: 'text/plain',
          metadata: {},
          session_id: null,
          ...fields,
        };
      }

      /** Creates files one millisecond apart, so that "newest first" and time bounds have one right answer. */
      async function createFiles(tenantId: string, files: Partial<NewFile>[]): Promise<StoredFile[]> {
        const created: StoredFile[] = [];
        for (const f of files) {
          const previous = created.at(-1);
          if (previous) await pastInstant(previous.created_at);
          created.push(await ctx.store.createFile(tenantId, newFile(f), Buffer.from(f.name ?? 'x')));
        }
        return created;
      }

      const names = (page: { items: StoredFile[] }) => page.items.map((f) => f.name);
      const all = { limit: 100, offset: 0 };

      it('createFile returns the record with the size of the bytes', async () => {
        const tenantId = await tenant();
        const file = newFile({
          name: 'report.pdf',
          mime_type: 'application/pdf',
          metadata: { source: 'crm' },
        });
        const content = Buffer.from('%PDF-1.7 hello');
        const stored = await ctx.store.createFile(tenantId, file, content);
        assert.deepEqual(stored, {
          id: file.id,
          name: 'report.pdf',
          size: content.length,
          mime_type: 'application/pdf',
          created_at: stored.created_at,
          metadata: { source: 'crm' },
          session_id: null,
        });
        assert.match(stored.created_at, isoInstant);
        assert.deepEqual(await ctx.store.getFile(tenantId, file.id), stored);
      });

      it('readFileContent returns exactly the stored bytes', async () => {
        const tenantId = await tenant();
        // Every byte value, including NUL and invalid UTF-8, and enough of them to exceed a page.
        const content = Buffer.alloc(70_000);
        for (let i = 0; i < content.length; i++) content[i] = (i * 31 + (i >> 8)) & 0xff;
        const stored = await ctx.store.createFile(
          tenantId,
          newFile({ mime_type: 'application/octet-stream' }),
          content,
        );
        assert.equal(stored.size, 70_000);
        const read = await ctx.store.readFileContent(tenantId, stored.id);
        assert.ok(read);
        assert.ok(Buffer.isBuffer(read));
        assert.equal(Buffer.compare(read, content), 0);
      });

      it('an empty file reads back as zero bytes, not as missing', async () => {
        const tenantId = await tenant();
        const stored = await ctx.store.createFile(tenantId, newFile(), Buffer.alloc(0));
        assert.equal(stored.size, 0);
        const read = await ctx.store.readFileContent(tenantId, stored.id);
        assert.ok(read, 'content of an empty file is a buffer');
        assert.equal(read.length, 0);
      });

      it('metadata and a null session_id round-trip', async () => {
        const tenantId = await tenant();
        const metadata = { a: 1, b: [true, null, 'x'], c: { d: 'é' } };
        const stored = await ctx.store.createFile(
          tenantId,
          newFile({ metadata, session_id: null }),
          Buffer.from('x'),
        );
        const read = await ctx.store.getFile(tenantId, stored.id);
        assert.deepEqual(read?.metadata, metadata);
        assert.equal(read?.session_id, null);
        assert.equal((await ctx.store.listFiles(tenantId, {}, all)).items[0]?.session_id, null);
      });

      it('an unknown file id reads as null', async () => {
        const tenantId = await tenant();
        assert.equal(await ctx.store.getFile(tenantId, unique('file')), null);
        assert.equal(await ctx.store.readFileContent(tenantId, unique('file')), null);
      });

      it("a tenant can neither see, read, list nor delete another tenant's file", async () => {
        const owner = await tenant();
        const stranger = await tenant();
        const stored = await ctx.store.createFile(owner, newFile(), Buffer.from('secret'));
        assert.equal(await ctx.store.getFile(stranger, stored.id), null);
        assert.equal(await ctx.store.readFileContent(stranger, stored.id), null);
        assert.deepEqual(await ctx.store.listFiles(stranger, {}, all), { items: [], next_offset: null });
        assert.equal(await ctx.store.deleteFile(stranger, stored.id), false);
        assert.deepEqual(await ctx.store.getFile(owner, stored.id), stored, 'the owner still has the file');
        assert.deepEqual(await ctx.store.readFileContent(owner, stored.id), Buffer.from('secret'));
      });

      it('deleteFile removes the record and its bytes, and reports false the second time', async () => {
        const tenantId = await tenant();
        const [keep, gone] = await createFiles(tenantId, [{ name: 'keep.txt' }, { name: 'gone.txt' }]);
        assert.ok(keep && gone);
        assert.equal(await ctx.store.deleteFile(tenantId, gone.id), true);
        assert.equal(await ctx.store.getFile(tenantId, gone.id), null);
        assert.equal(await ctx.store.readFileContent(tenantId, gone.id), null);
        assert.deepEqual(names(await ctx.store.listFiles(tenantId, {}, all)), ['keep.txt']);
        assert.equal(await ctx.store.deleteFile(tenantId, gone.id), false);
        assert.equal(await ctx.store.deleteFile(tenantId, unique('file')), false);
        assert.deepEqual(await ctx.store.readFileContent(tenantId, keep.id), Buffer.from('keep.txt'));
      });

      describe('listFiles', () => {
        it('lists the tenant pool newest first', async () => {
          const tenantId = await tenant();
          const files = await createFiles(tenantId, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
          assert.deepEqual(await ctx.store.listFiles(tenantId, {}, all), {
            items: files.reverse(),
            next_offset: null,
          });
        });

        it('filters by a case-insensitive prefix of the name', async () => {
          const tenantId = await tenant();
          await createFiles(tenantId, [
            { name: 'Report.PDF' },
            { name: 'report-2.txt' },
            { name: 'summary report.txt' },
            { name: 'rep' },
          ]);
          assert.deepEqual(names(await ctx.store.listFiles(tenantId, { name: 'REP' }, all)), [
            'rep',
            'report-2.txt',
            'Report.PDF',
          ]);
          assert.deepEqual(names(await ctx.store.listFiles(tenantId, { name: 'report.' }, all)), [
            'Report.PDF',
          ]);
          assert.deepEqual(names(await ctx.store.listFiles(tenantId, { name: 'port' }, all)), []);
        });

        it('folds the case of non-ASCII letters in the name prefix', async () => {
          const tenantId = await tenant();
          await createFiles(tenantId, [{ name: 'Ärger.txt' }, { name: 'Arger.txt' }, { name: 'ärmel.txt' }]);
          const list = async (name: string) => names(await ctx.store.listFiles(tenantId, { name }, all));
          assert.deepEqual(await list('ä'), ['ärmel.txt', 'Ärger.txt']);
          assert.deepEqual(await list('Ä'), ['ärmel.txt', 'Ärger.txt']);
          assert.deepEqual(await list('äR'), ['ärmel.txt', 'Ärger.txt']);
          assert.deepEqual(await list('ÄRG'), ['Ärger.txt']);
          assert.deepEqual(await list('a'), ['Arger.txt']);
        });

        it("matches '%', '_' and '\\' in the name prefix literally", async () => {
          const tenantId = await tenant();
          await createFiles(tenantId, [
            { name: '100%_done.txt' },
            { name: '100%xdone.txt' },
            { name: '100x_done.txt' },
            { name: '1000.txt' },
            { name: 'a_b.txt' },
            { name: 'axb.txt' },
            { name: 'back\\slash.txt' },
            { name: 'backxslash.txt' },
          ]);
          const list = async (name: string) => names(await ctx.store.listFiles(tenantId, { name }, all));
          assert.deepEqual(await list('100%'), ['100%xdone.txt', '100%_done.txt']);
          assert.deepEqual(await list('100%_'), ['100%_done.txt']);
          assert.deepEqual(await list('a_'), ['a_b.txt']);
          assert.deepEqual(await list('%'), []);
          assert.deepEqual(await list('_'), []);
          assert.deepEqual(await list('back\\'), ['back\\slash.txt']);
        });

        it('filters by exact MIME type', async () => {
          const tenantId = await tenant();
          await createFiles(tenantId, [
            { name: 'a.png', mime_type: 'image/png' },
            { name: 'b.pdf', mime_type: 'application/pdf' },
            { name: 'c.png', mime_type: 'image/png' },
          ]);
          const list = async (mime_type: string) =>
            names(await ctx.store.listFiles(tenantId, { mime_type }, all));
          assert.deepEqual(await list('image/png'), ['c.png', 'a.png']);
          assert.deepEqual(await list('application/pdf'), ['b.pdf']);
          assert.deepEqual(await list('image'), []);
        });

        it('treats created_after and created_before as exclusive bounds', async () => {
          const tenantId = await tenant();
          const [a, b, c] = await createFiles(tenantId, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
          assert.ok(a && b && c);
          const list = async (filter: { created_after?: string; created_before?: string }) =>
            names(await ctx.store.listFiles(tenantId, filter, all));
          assert.deepEqual(await list({ created_after: a.created_at }), ['c', 'b']);
          assert.deepEqual(await list({ created_before: c.created_at }), ['b', 'a']);
          assert.deepEqual(await list({ created_after: a.created_at, created_before: c.created_at }), ['b']);
          assert.deepEqual(await list({ created_after: b.created_at, created_before: c.created_at }), []);
          assert.deepEqual(await list({ created_after: c.created_at }), []);
          assert.deepEqual(await list({ created_before: a.created_at }), []);
        });

        it('compares time bounds as instants, whatever ISO 8601 offset they are written with', async () => {
          const tenantId = await tenant();
          const [file] = await createFiles(tenantId, [{ name: 'a' }]);
          assert.ok(file);
          const at = Date.parse(file.created_at);
          // The same instants as created_at ∓ 1 ms, written in another zone (Berlin in winter, and UTC-1).
          const zoned = (ms: number, offsetHours: number) =>
            `${new Date(ms + offsetHours * 3_600_000).toISOString().slice(0, -1)}${offsetHours >= 0 ? '+' : '-'}${String(Math.abs(offsetHours)).padStart(2, '0')}:00`;
          const list = async (filter: { created_after?: string; created_before?: string }) =>
            names(await ctx.store.listFiles(tenantId, filter, all));
          assert.deepEqual(await list({ created_after: zoned(at - 1, 1) }), ['a']);
          assert.deepEqual(await list({ created_before: zoned(at + 1, -1) }), ['a']);
          assert.deepEqual(await list({ created_after: zoned(at, 1) }), []);
          assert.deepEqual(await list({ created_before: zoned(at, -1) }), []);
        });

        it('combines filters, and ignores filters given as undefined', async () => {
          const tenantId = await tenant();
          const [a] = await createFiles(tenantId, [
            { name: 'Plan.png', mime_type: 'image/png' },
            { name: 'plan.pdf', mime_type: 'application/pdf' },
            { name: 'photo.png', mime_type: 'image/png' },
          ]);
          assert.ok(a);
          const both = await ctx.store.listFiles(tenantId, { name: 'PLAN', mime_type: 'image/png' }, all);
          assert.deepEqual(names(both), ['Plan.png']);
          const later = await ctx.store.listFiles(tenantId, { name: 'p', created_after: a.created_at }, all);
          assert.deepEqual(names(later), ['photo.png', 'plan.pdf']);
          // The HTTP layer passes absent query parameters as undefined properties.
          const none = {
            name: undefined,
            mime_type: undefined,
            created_after: undefined,
            created_before: undefined,
          };
          assert.deepEqual(names(await ctx.store.listFiles(tenantId, none, all)), [
            'photo.png',
            'plan.pdf',
            'Plan.png',
          ]);
        });

        it('filters by the conversation the files were uploaded in, alone and combined, newest first', async () => {
          const tenantId = await tenant();
          const stranger = await tenant();
          const one = (await createSession(tenantId)).record.id;
          const two = (await createSession(tenantId)).record.id;
          const silent = (await createSession(tenantId)).record.id;
          const [a] = await createFiles(tenantId, [
            { name: 'a.png', mime_type: 'image/png', session_id: one },
            { name: 'b.pdf', mime_type: 'application/pdf', session_id: one },
            { name: 'pool.png', mime_type: 'image/png', session_id: null },
            { name: 'c.png', mime_type: 'image/png', session_id: two },
            { name: 'd.png', mime_type: 'image/png', session_id: one },
          ]);
          assert.ok(a);
          const list = async (filter: FileFilter) => names(await ctx.store.listFiles(tenantId, filter, all));

          assert.deepEqual(await list({ session_id: one }), ['d.png', 'b.pdf', 'a.png']);
          assert.deepEqual(await list({ session_id: two }), ['c.png']);
          assert.deepEqual(await list({ session_id: silent }), [], 'a conversation without uploads');
          assert.deepEqual(await list({ session_id: newId('ses') }), [], 'an unknown conversation');
          // The listed records are whole and name their conversation.
          const [listed] = (await ctx.store.listFiles(tenantId, { session_id: two }, all)).items;
          assert.ok(listed);
          assert.equal(listed.session_id, two);
          assert.deepEqual(listed, await ctx.store.getFile(tenantId, listed.id));
          // Combined with the other filters.
          assert.deepEqual(await list({ session_id: one, mime_type: 'image/png' }), ['d.png', 'a.png']);
          assert.deepEqual(await list({ session_id: one, name: 'B' }), ['b.pdf']);
          assert.deepEqual(await list({ session_id: two, name: 'pool' }), []);
          assert.deepEqual(await list({ session_id: one, created_after: a.created_at }), ['d.png', 'b.pdf']);
          // Pages count the filtered items.
          const first = await ctx.store.listFiles(tenantId, { session_id: one }, { limit: 2, offset: 0 });
          assert.deepEqual([names(first), first.next_offset], [['d.png', 'b.pdf'], 2]);
          const second = await ctx.store.listFiles(tenantId, { session_id: one }, { limit: 2, offset: 2 });
          assert.deepEqual([names(second), second.next_offset], [['a.png'], null]);
          // Undefined lists the whole tenant; another tenant lists nothing of the conversation.
          assert.deepEqual(await list({ session_id: undefined }), [
            'd.png',
            'c.png',
            'pool.png',
            'b.pdf',
            'a.png',
          ]);
          assert.deepEqual(await ctx.store.listFiles(stranger, { session_id: one }, all), {
            items: [],
            next_offset: null,
          });
        });

        it('pages carry next_offset until no item follows, even after a full last page', async () => {
          const tenantId = await tenant();
          const files = (await createFiles(tenantId, [{}, {}, {}, {}, {}])).reverse();
          const list = (limit: number, offset: number) =>
            ctx.store.listFiles(tenantId, {}, { limit, offset });

          assert.deepEqual(await list(2, 0), { items: files.slice(0, 2), next_offset: 2 });
          assert.deepEqual(await list(2, 2), { items: files.slice(2, 4), next_offset: 4 });
          assert.deepEqual(await list(2, 4), { items: files.slice(4), next_offset: null });
          assert.deepEqual(await list(3, 2), { items: files.slice(2), next_offset: null });
          assert.deepEqual(await list(5, 0), { items: files, next_offset: null });
          assert.deepEqual(await list(2, 5), { items: [], next_offset: null });
        });

        it('pages a filtered list by the filtered items', async () => {
          const tenantId = await tenant();
          await createFiles(tenantId, [
            { name: 'a1.png', mime_type: 'image/png' },
            { name: 'skip.pdf', mime_type: 'application/pdf' },
            { name: 'a2.png', mime_type: 'image/png' },
            { name: 'a3.png', mime_type: 'image/png' },
          ]);
          const list = (offset: number) =>
            ctx.store.listFiles(tenantId, { mime_type: 'image/png' }, { limit: 2, offset });
          const first = await list(0);
          assert.deepEqual([names(first), first.next_offset], [['a3.png', 'a2.png'], 2]);
          const second = await list(2);
          assert.deepEqual([names(second), second.next_offset], [['a1.png'], null]);
        });
      });
    });

    describe('sessions, messages, fencing and idempotency records', () => {
      const ctx = useStore({ migrate: true });

      async function tenant() {
        return (await ctx.store.createTenant(unique('t'), 'Tenant')).id;
      }

      const { claim, inAnHour, newSession, createSession } = sessionHelpers(ctx);

      /** Creates sessions one millisecond apart, so that "newest first" has one right answer. */
      async function createSessions(tenantId: string, sessions: Partial<NewSession>[]) {
        const created: SessionRecord[] = [];
        for (const fields of sessions) {
          const previous = created.at(-1);
          if (previous) await pastInstant(previous.created_at);
          created.push((await createSession(tenantId, fields)).record);
        }
        return created;
      }

      function message(turnId: string, role: 'user' | 'assistant', text: string): NewMessage {
        return { id: newId('msg'), role, content: [{ type: 'text', text }], metadata: null, turn_id: turnId };
      }

      /** The stored form of messages committed at `at`. */
      const stored = (sessionId: string, at: string, messages: NewMessage[]): MessageRecord[] =>
        messages.map((m) => ({ ...m, session_id: sessionId, created_at: at }));

      const isStale = (shard: number) => (err: unknown) =>
        err instanceof StaleEpochError && err.shard === shard;

      const snapshotOf = async (id: string) => (await ctx.store.loadSession(id))?.snapshot;

      const all = { limit: 100, offset: 0 };

      /** ISO instants `ms` milliseconds after the start of a test. */
      const after = (start: number, ms: number) => new Date(start + ms).toISOString();

      describe('claimShards', () => {
        it('bumps the epoch of each named shard by one per claim and returns the new epochs', async () => {
          const a = shardOf(newId('ses'));
          const b = (a + 1) % SHARD_COUNT;
          const first = await ctx.store.claimShards('node-a', [a, b]);
          assert.deepEqual(
            [...first.keys()].sort((x, y) => x - y),
            [a, b].sort((x, y) => x - y),
          );
          const second = await ctx.store.claimShards('node-b', [a, b]);
          assert.deepEqual(
            [...second.keys()].sort((x, y) => x - y),
            [a, b].sort((x, y) => x - y),
          );
          for (const shard of [a, b]) {
            const before = first.get(shard);
            assert.ok(Number.isInteger(before), `epoch of shard ${shard}`);
            assert.equal(second.get(shard), (before as number) + 1);
          }
          // A claim of one shard leaves the others' epochs alone.
          const third = await ctx.store.claimShards('node-c', [a]);
          assert.deepEqual([...third.keys()], [a]);
          assert.equal(third.get(a), (second.get(a) as number) + 1);
          assert.equal((await ctx.store.claimShards('node-c', [b])).get(b), (second.get(b) as number) + 1);
        });

        it('claiming a shard again always gives a strictly greater epoch', async () => {
          const shard = shardOf(newId('ses'));
          let previous = (await claim(shard)).epoch;
          for (let i = 0; i < 3; i++) {
            const next = (await claim(shard)).epoch;
            assert.ok(next > previous, `${next} > ${previous}`);
            previous = next;
          }
        });
      });

      describe('createSession, getSession and loadSession', () => {
        it('a session created under the current fence is active, empty and read back identically', async () => {
          const tenantId = await tenant();
          const user = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:7' });
          const context = { locale: 'de-DE', cart: { items: [1, 2], total: 9.5 }, vip: true, none: null };
          const metadata = { channel: 'web', tags: ['a', 'é'] };
          const expiresAt = inAnHour();
          const { session, record } = await createSession(tenantId, {
            agent_id: 'sales',
            user_id: user.id,
            context,
            metadata,
            expires_at: expiresAt,
          });
          const expected: SessionRecord = {
            id: session.id,
            tenant_id: tenantId,
            agent_id: 'sales',
            user: { id: user.id, reference: 'crm:7' },
            status: 'active',
            created_at: record.created_at,
            updated_at: record.created_at,
            messages_count: 0,
            last_message_at: null,
            closed_at: null,
            close_reason: null,
            expires_at: expiresAt,
            context,
            metadata,
            shard: session.shard,
          };
          assert.deepEqual(record, expected);
          assert.match(record.created_at, isoInstant);
          assert.deepEqual(await ctx.store.getSession(tenantId, session.id), expected);
          assert.deepEqual(await ctx.store.loadSession(session.id), {
            session: expected,
            snapshot: session.snapshot,
          });
        });

        it('a session without a user has user null; a user without a reference is linked with a null one', async () => {
          const tenantId = await tenant();
          const anonymous = await createSession(tenantId);
          assert.equal(anonymous.record.user, null);
          assert.equal((await ctx.store.getSession(tenantId, anonymous.session.id))?.user, null);
          assert.deepEqual(anonymous.record.context, {});
          assert.deepEqual(anonymous.record.metadata, {});

          const user = await ctx.store.createUser(tenantId, unique('usr'), {});
          const linked = await createSession(tenantId, { user_id: user.id });
          assert.deepEqual(linked.record.user, { id: user.id, reference: null });
          assert.deepEqual((await ctx.store.loadSession(linked.session.id))?.session.user, {
            id: user.id,
            reference: null,
          });
        });

        it('createSession under a stale fence throws StaleEpochError and stores nothing', async () => {
          const tenantId = await tenant();
          const session = newSession();
          const stale = await claim(session.shard);
          const current = await claim(session.shard);
          await assert.rejects(
            () => ctx.store.createSession(tenantId, session, stale),
            isStale(session.shard),
          );
          assert.equal(await ctx.store.getSession(tenantId, session.id), null);
          assert.equal(await ctx.store.loadSession(session.id), null);
          assert.deepEqual(await ctx.store.listSessions(tenantId, {}, all), { items: [], next_offset: null });
          // An epoch the shard never had is refused as well: only the current one writes.
          const ahead = { shard: session.shard, epoch: current.epoch + 1 };
          await assert.rejects(
            () => ctx.store.createSession(tenantId, session, ahead),
            isStale(session.shard),
          );
          assert.equal(await ctx.store.loadSession(session.id), null);
          // The current owner can create it.
          const record = await ctx.store.createSession(tenantId, session, current);
          assert.equal(record.id, session.id);
        });

        it("getSession is scoped to the tenant: another tenant's session reads as null", async () => {
          const owner = await tenant();
          const stranger = await tenant();
          const { record } = await createSession(owner);
          assert.equal(await ctx.store.getSession(stranger, record.id), null);
          assert.deepEqual(await ctx.store.getSession(owner, record.id), record, 'the owner still has it');
        });

        it('an unknown session id reads as null', async () => {
          const tenantId = await tenant();
          assert.equal(await ctx.store.getSession(tenantId, newId('ses')), null);
          assert.equal(await ctx.store.loadSession(newId('ses')), null);
        });
      });

      describe('commitSession', () => {
        it('appends messages in order, continuing the sequence across commits', async () => {
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId);
          const turn1 = newId('turn');
          const turn2 = newId('turn');
          const first = [
            {
              ...message(turn1, 'user', 'Hello'),
              content: [
                { type: 'text', text: 'Look at this' },
                { type: 'image', file_id: 'file_img' },
                { type: 'file', file_id: 'file_doc' },
              ] satisfies ContentBlock[],
              metadata: { client: 'web', n: 1 },
            },
            message(turn1, 'assistant', 'Hi! How can I help?'),
          ];
          const second = [
            message(turn2, 'user', 'Where is my order?'),
            message(turn2, 'assistant', 'Let me check.'),
            message(turn2, 'assistant', 'It ships tomorrow.'),
          ];
          const start = Date.now();
          const at1 = after(start, 1_000);
          const result1 = await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: at1,
            messages: first,
            patch: { last_message_at: at1, snapshot: '{"step":1}' },
          });
          assert.deepEqual(result1, {
            messages: stored(record.id, at1, first),
            messages_count: 2,
            updated_at: at1,
          });

          // Without `at`, the store stamps the write with its own clock.
          const result2 = await ctx.store.commitSession({
            session_id: record.id,
            fence,
            messages: second,
            patch: { snapshot: '{"step":2}' },
          });
          assert.match(result2.updated_at, isoInstant);
          assert.equal(result2.messages_count, 5);
          assert.deepEqual(result2.messages, stored(record.id, result2.updated_at, second));

          const expected = [
            ...stored(record.id, at1, first),
            ...stored(record.id, result2.updated_at, second),
          ];
          assert.deepEqual(await ctx.store.listMessages(tenantId, record.id, all), {
            items: expected,
            next_offset: null,
          });
          assert.deepEqual(await ctx.store.turnMessages(record.id, turn1), expected.slice(0, 2));
          assert.deepEqual(await ctx.store.turnMessages(record.id, turn2), expected.slice(2));
          assert.deepEqual(await ctx.store.turnMessages(record.id, newId('turn')), []);
          for (const m of expected) {
            assert.deepEqual(await ctx.store.getMessage(tenantId, record.id, m.id), m);
          }
          const session = await ctx.store.getSession(tenantId, record.id);
          assert.equal(session?.messages_count, 5);
          assert.equal(session?.last_message_at, at1, 'last_message_at is set only when patched');
          assert.equal(session?.updated_at, result2.updated_at);
          assert.equal(session?.created_at, record.created_at);
        });

        it('recentMessages returns the last messages, oldest first', async () => {
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId);
          const turn = newId('turn');
          const messages = ['one', 'two', 'three', 'four', 'five'].map((text, i) =>
            message(turn, i % 2 === 0 ? 'user' : 'assistant', text),
          );
          const at = new Date().toISOString();
          // Two commits, so that "last" has to follow the sequence across them.
          for (const batch of [messages.slice(0, 3), messages.slice(3)]) {
            await ctx.store.commitSession({
              session_id: record.id,
              fence,
              at,
              messages: batch,
              patch: { snapshot: '{}' },
            });
          }
          const texts = (list: MessageRecord[]) =>
            list.map((m) => (m.content[0]?.type === 'text' ? m.content[0].text : m.content[0]?.file_id));
          assert.deepEqual(texts(await ctx.store.recentMessages(record.id, 2)), ['four', 'five']);
          assert.deepEqual(texts(await ctx.store.recentMessages(record.id, 4)), [
            'two',
            'three',
            'four',
            'five',
          ]);
          assert.deepEqual(await ctx.store.recentMessages(record.id, 10), stored(record.id, at, messages));
          assert.deepEqual(await ctx.store.recentMessages(newId('ses'), 10), []);
        });

        it('listMessages pages oldest first with next_offset until no message follows', async () => {
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId);
          const turn = newId('turn');
          const messages = Array.from({ length: 5 }, (_, i) => message(turn, 'user', `m${i}`));
          const at = new Date().toISOString();
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at,
            messages,
            patch: { snapshot: '{}' },
          });
          const expected = stored(record.id, at, messages);
          const list = (limit: number, offset: number) =>
            ctx.store.listMessages(tenantId, record.id, { limit, offset });
          assert.deepEqual(await list(2, 0), { items: expected.slice(0, 2), next_offset: 2 });
          assert.deepEqual(await list(2, 2), { items: expected.slice(2, 4), next_offset: 4 });
          assert.deepEqual(await list(2, 4), { items: expected.slice(4), next_offset: null });
          assert.deepEqual(await list(3, 2), { items: expected.slice(2), next_offset: null });
          assert.deepEqual(await list(5, 0), { items: expected, next_offset: null });
          assert.deepEqual(await list(2, 5), { items: [], next_offset: null });
        });

        it('sets the patched columns, keeps the others, and uses `at` for updated_at', async () => {
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId, { metadata: { keep: true } });
          const start = Date.now();
          const at = after(start, 5_000);
          const lastMessageAt = after(start, 4_000);
          const expiresAt = after(start, 7_200_000);
          const result = await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at,
            patch: { last_message_at: lastMessageAt, expires_at: expiresAt, snapshot: '{"v":"extended"}' },
          });
          assert.deepEqual(result, { messages: [], messages_count: 0, updated_at: at });
          const extended = {
            ...record,
            updated_at: at,
            last_message_at: lastMessageAt,
            expires_at: expiresAt,
          };
          assert.deepEqual(await ctx.store.getSession(tenantId, record.id), extended);
          assert.equal(await snapshotOf(record.id), '{"v":"extended"}');

          const closedAt = after(start, 6_000);
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: closedAt,
            patch: {
              status: 'closed',
              closed_at: closedAt,
              close_reason: 'resolved',
              snapshot: '{"v":"closed"}',
            },
          });
          const closed: SessionRecord = {
            ...extended,
            status: 'closed',
            closed_at: closedAt,
            close_reason: 'resolved',
            updated_at: closedAt,
          };
          assert.deepEqual(await ctx.store.getSession(tenantId, record.id), closed);
          assert.deepEqual(await ctx.store.loadSession(record.id), {
            session: closed,
            snapshot: '{"v":"closed"}',
          });

          // A patch of the snapshot alone changes only the snapshot and updated_at.
          const later = after(start, 8_000);
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: later,
            patch: { snapshot: '{"v":3}' },
          });
          const untouched = { ...closed, updated_at: later };
          assert.deepEqual(await ctx.store.loadSession(record.id), {
            session: untouched,
            snapshot: '{"v":3}',
          });

          // An explicit null clears the close reason.
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: later,
            patch: { close_reason: null, snapshot: '{"v":4}' },
          });
          assert.deepEqual(await ctx.store.getSession(tenantId, record.id), {
            ...untouched,
            close_reason: null,
          });
        });

        it('a commit with a stale epoch throws StaleEpochError and changes nothing', async () => {
          const tenantId = await tenant();
          const { record, fence: stale } = await createSession(tenantId);
          const turn = newId('turn');
          const start = Date.now();
          await ctx.store.commitSession({
            session_id: record.id,
            fence: stale,
            at: after(start, 1_000),
            messages: [message(turn, 'user', 'Hi'), message(turn, 'assistant', 'Hello')],
            patch: { last_message_at: after(start, 1_000), snapshot: '{"v":"before"}' },
            idempotency: {
              key: 'key-1',
              fingerprint: 'fp-1',
              turn_id: turn,
              user_message_id: null,
              expires_at: after(start, 86_400_000),
            },
          });
          const sessionBefore = await ctx.store.loadSession(record.id);
          const messagesBefore = await ctx.store.listMessages(tenantId, record.id, all);
          const recordBefore = await ctx.store.getIdempotencyRecord(record.id, 'key-1');
          assert.ok(sessionBefore && messagesBefore && recordBefore);

          // Another process takes the shard over.
          const current = await claim(record.shard);
          const lateTurn = newId('turn');
          const late = message(lateTurn, 'user', 'Too late');
          await assert.rejects(
            () =>
              ctx.store.commitSession({
                session_id: record.id,
                fence: stale,
                at: after(start, 2_000),
                messages: [late, message(lateTurn, 'assistant', 'Lost')],
                patch: {
                  status: 'closed',
                  closed_at: after(start, 2_000),
                  close_reason: 'fenced',
                  expires_at: after(start, 9_000_000),
                  last_message_at: after(start, 2_000),
                  snapshot: '{"v":"stale"}',
                },
                idempotency: {
                  key: 'key-2',
                  fingerprint: 'fp-2',
                  turn_id: lateTurn,
                  user_message_id: late.id,
                  expires_at: after(start, 86_400_000),
                },
                idempotencyResponse: { key: 'key-1', status_code: 200, response: { stale: true } },
              }),
            isStale(record.shard),
          );
          assert.deepEqual(await ctx.store.loadSession(record.id), sessionBefore);
          assert.deepEqual(await ctx.store.listMessages(tenantId, record.id, all), messagesBefore);
          assert.equal(await ctx.store.getMessage(tenantId, record.id, late.id), null);
          assert.deepEqual(await ctx.store.turnMessages(record.id, lateTurn), []);
          assert.deepEqual(await ctx.store.getIdempotencyRecord(record.id, 'key-1'), recordBefore);
          assert.equal(await ctx.store.getIdempotencyRecord(record.id, 'key-2'), null);

          // The new owner writes on, after the untouched state.
          const next = message(newId('turn'), 'user', 'Still there?');
          const result = await ctx.store.commitSession({
            session_id: record.id,
            fence: current,
            messages: [next],
            patch: { snapshot: '{"v":"after"}' },
          });
          assert.equal(result.messages_count, 3);
          assert.deepEqual(
            (await ctx.store.listMessages(tenantId, record.id, all))?.items.map((m) => m.id),
            [...(messagesBefore.items.map((m) => m.id) ?? []), next.id],
          );
        });
        it('commits made together succeed or fail each on its own: a stale one among them loses only itself', async () => {
          const tenantId = await tenant();
          const sessions = await Promise.all(Array.from({ length: 6 }, () => createSession(tenantId)));
          const fenced = sessions[2];
          assert.ok(fenced);
          const current = await claim(fenced.record.shard);
          // Sessions of the same shard share the new epoch; only the fenced session keeps the old fence.
          const fenceOf = (s: (typeof sessions)[number]) =>
            s === fenced ? fenced.fence : s.record.shard === fenced.record.shard ? current : s.fence;
          const outcomes = await Promise.allSettled(
            sessions.map((s) =>
              ctx.store.commitSession({
                session_id: s.record.id,
                fence: fenceOf(s),
                messages: [message(newId('turn'), 'user', `to ${s.record.id}`)],
                patch: { snapshot: '{"v":"together"}' },
              }),
            ),
          );
          for (const [i, outcome] of outcomes.entries()) {
            const s = sessions[i];
            assert.ok(s);
            const page = await ctx.store.listMessages(tenantId, s.record.id, all);
            if (s === fenced) {
              assert.equal(outcome.status, 'rejected');
              assert.ok(outcome.status === 'rejected' && isStale(fenced.record.shard)(outcome.reason));
              assert.deepEqual(page?.items, []);
            } else {
              assert.equal(
                outcome.status,
                'fulfilled',
                String(outcome.status === 'rejected' && outcome.reason),
              );
              assert.deepEqual(
                page?.items.map((m) => m.content),
                [[{ type: 'text', text: `to ${s.record.id}` }]],
              );
            }
          }
        });
      });

      describe('idempotency records', () => {
        it('a new key is recorded without an answer; a later commit stores the answer', async () => {
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId);
          const turn = newId('turn');
          const userMessage = message(turn, 'user', 'Hi');
          const start = Date.now();
          const at = after(start, 1_000);
          const expiresAt = after(start, 86_400_000);
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at,
            messages: [userMessage],
            patch: { snapshot: '{}' },
            idempotency: {
              key: 'req-1',
              fingerprint: 'sha256:abc',
              turn_id: turn,
              user_message_id: userMessage.id,
              expires_at: expiresAt,
            },
          });
          const pending: IdempotencyRecord = {
            session_id: record.id,
            key: 'req-1',
            fingerprint: 'sha256:abc',
            turn_id: turn,
            status_code: null,
            response: null,
            created_at: at,
            expires_at: expiresAt,
          };
          assert.deepEqual(await ctx.store.getIdempotencyRecord(record.id, 'req-1'), pending);

          const response = {
            turn_id: turn,
            messages: [{ id: 'msg_1', content: [{ type: 'text', text: 'Hällo "quoted"' }] }],
            usage: { tokens: 12, ratio: 0.5 },
            done: true,
            error: null,
          };
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: after(start, 2_000),
            messages: [message(turn, 'assistant', 'Hello')],
            patch: { snapshot: '{}' },
            idempotencyResponse: { key: 'req-1', status_code: 201, response },
          });
          assert.deepEqual(await ctx.store.getIdempotencyRecord(record.id, 'req-1'), {
            ...pending,
            status_code: 201,
            response,
          });
          // Keys belong to their session.
          assert.equal(await ctx.store.getIdempotencyRecord(record.id, 'req-2'), null);
          const other = await createSession(tenantId);
          assert.equal(await ctx.store.getIdempotencyRecord(other.record.id, 'req-1'), null);
        });

        it('recording the same key again replaces the record, answer and all', async () => {
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId);
          const start = Date.now();
          const firstTurn = newId('turn');
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: after(start, 1_000),
            patch: { snapshot: '{}' },
            idempotency: {
              key: 'req',
              fingerprint: 'fp-old',
              turn_id: firstTurn,
              user_message_id: null,
              expires_at: after(start, 2_000),
            },
          });
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: after(start, 1_500),
            patch: { snapshot: '{}' },
            idempotencyResponse: { key: 'req', status_code: 200, response: ['old'] },
          });
          const secondTurn = newId('turn');
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: after(start, 3_000),
            patch: { snapshot: '{}' },
            idempotency: {
              key: 'req',
              fingerprint: 'fp-new',
              turn_id: secondTurn,
              user_message_id: null,
              expires_at: after(start, 90_000_000),
            },
          });
          assert.deepEqual(await ctx.store.getIdempotencyRecord(record.id, 'req'), {
            session_id: record.id,
            key: 'req',
            fingerprint: 'fp-new',
            turn_id: secondTurn,
            status_code: null,
            response: null,
            created_at: after(start, 3_000),
            expires_at: after(start, 90_000_000),
          });
        });

        it('deleteExpiredIdempotencyRecords deletes only records whose expiry has passed and counts them', async () => {
          // Expiries in 1990, long before anything other tests store: the count is then this test's alone.
          const now = Date.parse('1990-06-01T00:00:00.000Z');
          const iso = (ms: number) => new Date(now + ms).toISOString();
          // Clears what an interrupted earlier run on a shared database may have left before `now`.
          await ctx.store.deleteExpiredIdempotencyRecords(iso(0));
          const tenantId = await tenant();
          const { record, fence } = await createSession(tenantId);
          const keys = { gone1: iso(-86_400_000), gone2: iso(-1), kept1: iso(1), kept2: iso(86_400_000) };
          for (const [key, expires_at] of Object.entries(keys)) {
            await ctx.store.commitSession({
              session_id: record.id,
              fence,
              patch: { snapshot: '{}' },
              idempotency: {
                key,
                fingerprint: key,
                turn_id: newId('turn'),
                user_message_id: null,
                expires_at,
              },
            });
          }
          assert.equal(await ctx.store.deleteExpiredIdempotencyRecords(iso(0)), 2);
          assert.equal(await ctx.store.getIdempotencyRecord(record.id, 'gone1'), null);
          assert.equal(await ctx.store.getIdempotencyRecord(record.id, 'gone2'), null);
          assert.equal((await ctx.store.getIdempotencyRecord(record.id, 'kept1'))?.expires_at, keys.kept1);
          assert.equal((await ctx.store.getIdempotencyRecord(record.id, 'kept2'))?.expires_at, keys.kept2);
          assert.equal(await ctx.store.deleteExpiredIdempotencyRecords(iso(0)), 0, 'nothing left to delete');
          // Leaves nothing behind for later runs on a shared database.
          assert.equal(await ctx.store.deleteExpiredIdempotencyRecords(iso(2 * 86_400_000)), 2);
        });
      });

      describe('listSessions', () => {
        it("lists the tenant's sessions newest first", async () => {
          const tenantId = await tenant();
          const sessions = await createSessions(tenantId, [{}, {}, {}]);
          assert.deepEqual(await ctx.store.listSessions(tenantId, {}, all), {
            items: sessions.reverse(),
            next_offset: null,
          });
        });

        it('filters by status, agent, user and the scope of agents, alone and combined', async () => {
          const tenantId = await tenant();
          const ann = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:ann' });
          const bo = await ctx.store.createUser(tenantId, unique('usr'), {});
          const [s1, s2, s3, s4] = await createSessions(tenantId, [
            { agent_id: 'support', user_id: ann.id },
            { agent_id: 'sales', user_id: ann.id },
            { agent_id: 'support', user_id: bo.id },
            { agent_id: 'billing' },
          ]);
          assert.ok(s1 && s2 && s3 && s4);
          for (const [s, status] of [
            [s2, 'closed'],
            [s4, 'expired'],
          ] as const) {
            const fence = await claim(s.shard);
            await ctx.store.commitSession({ session_id: s.id, fence, patch: { status, snapshot: '{}' } });
          }
          const ids = async (filter: SessionFilter) =>
            (await ctx.store.listSessions(tenantId, filter, all)).items.map((s) => s.id);

          assert.deepEqual(await ids({}), [s4.id, s3.id, s2.id, s1.id]);
          assert.deepEqual(await ids({ status: 'active' }), [s3.id, s1.id]);
          assert.deepEqual(await ids({ status: 'closed' }), [s2.id]);
          assert.deepEqual(await ids({ status: 'expired' }), [s4.id]);
          assert.deepEqual(await ids({ agent_id: 'support' }), [s3.id, s1.id]);
          assert.deepEqual(await ids({ agent_id: 'nobody' }), []);
          assert.deepEqual(await ids({ user_id: ann.id }), [s2.id, s1.id]);
          assert.deepEqual(await ids({ user_id: bo.id }), [s3.id]);
          assert.deepEqual(await ids({ agent_ids: ['sales', 'billing'] }), [s4.id, s2.id]);
          assert.deepEqual(await ids({ agent_ids: ['support'] }), [s3.id, s1.id]);
          assert.deepEqual(await ids({ agent_ids: [] }), [], 'a scope of no agents lists nothing');
          assert.deepEqual(await ids({ agent_ids: ['support'], status: 'active', user_id: ann.id }), [s1.id]);
          assert.deepEqual(await ids({ agent_ids: ['sales'], agent_id: 'support' }), []);
          // The HTTP layer passes absent query parameters as undefined properties.
          const none = { status: undefined, agent_id: undefined, user_id: undefined, agent_ids: undefined };
          assert.deepEqual(await ids(none), [s4.id, s3.id, s2.id, s1.id]);
          // Listed records are whole, with the user's reference.
          const [listed] = (await ctx.store.listSessions(tenantId, { status: 'closed' }, all)).items;
          assert.deepEqual(listed, await ctx.store.getSession(tenantId, s2.id));
          assert.deepEqual(listed?.user, { id: ann.id, reference: 'crm:ann' });
        });

        it('pages carry next_offset until no session follows, even after a full last page', async () => {
          const tenantId = await tenant();
          const sessions = (await createSessions(tenantId, [{}, {}, {}, {}, {}])).reverse();
          const list = (limit: number, offset: number) =>
            ctx.store.listSessions(tenantId, {}, { limit, offset });
          assert.deepEqual(await list(2, 0), { items: sessions.slice(0, 2), next_offset: 2 });
          assert.deepEqual(await list(2, 2), { items: sessions.slice(2, 4), next_offset: 4 });
          assert.deepEqual(await list(2, 4), { items: sessions.slice(4), next_offset: null });
          assert.deepEqual(await list(3, 2), { items: sessions.slice(2), next_offset: null });
          assert.deepEqual(await list(5, 0), { items: sessions, next_offset: null });
          assert.deepEqual(await list(2, 5), { items: [], next_offset: null });
        });

        it("a tenant never lists another tenant's sessions", async () => {
          const owner = await tenant();
          const stranger = await tenant();
          const { record } = await createSession(owner, { agent_id: 'support' });
          assert.deepEqual(await ctx.store.listSessions(stranger, {}, all), { items: [], next_offset: null });
          assert.deepEqual(await ctx.store.listSessions(stranger, { agent_id: 'support' }, all), {
            items: [],
            next_offset: null,
          });
          assert.deepEqual(await ctx.store.listSessions(owner, {}, all), {
            items: [record],
            next_offset: null,
          });
        });
      });

      describe('sessionsDueForExpiry', () => {
        it('returns active sessions whose expiry has passed, oldest expiry first, up to the limit', async () => {
          // Expiries in 1995, against a `now` of that time: unaffected by what other tests store for today.
          const now = Date.parse('1995-03-01T12:00:00.000Z');
          const iso = (ms: number) => new Date(now + ms).toISOString();
          const tenantId = await tenant();
          const created = await createSessions(tenantId, [
            { expires_at: iso(-1) },
            { expires_at: iso(-60_000) },
            { expires_at: iso(-30_000) },
            { expires_at: iso(0) },
            { expires_at: iso(60_000) },
          ]);
          const [late, oldest, closed, exact, future] = created;
          assert.ok(late && oldest && closed && exact && future);
          const closedFence = await claim(closed.shard);
          await ctx.store.commitSession({
            session_id: closed.id,
            fence: closedFence,
            patch: { status: 'closed', closed_at: iso(-40_000), snapshot: '{}' },
          });
          const ours = new Set(created.map((s) => s.id));
          const due = await ctx.store.sessionsDueForExpiry(iso(0), 1000);
          // A shared database may hold other due sessions; ours come in expiry order among them.
          assert.deepEqual(
            due.filter((id) => ours.has(id)),
            [oldest.id, late.id],
          );
          assert.equal((await ctx.store.sessionsDueForExpiry(iso(0), 1)).length, 1, 'the limit is kept');
          // A process asks only for the shards it owns.
          assert.deepEqual(
            (await ctx.store.sessionsDueForExpiry(iso(0), 1000, [oldest.shard])).filter((id) => ours.has(id)),
            [oldest, late].filter((s) => s.shard === oldest.shard).map((s) => s.id),
          );
          assert.deepEqual(await ctx.store.sessionsDueForExpiry(iso(0), 1000, []), []);
          // The expiry moves on with `now`.
          assert.deepEqual(
            (await ctx.store.sessionsDueForExpiry(iso(60_001), 1000)).filter((id) => ours.has(id)),
            [oldest.id, late.id, exact.id, future.id],
          );
          // Expiring the sessions leaves nothing due behind for later runs on a shared database.
          for (const s of [late, oldest, exact, future]) {
            await ctx.store.commitSession({
              session_id: s.id,
              fence: await claim(s.shard),
              patch: { status: 'expired', snapshot: '{}' },
            });
          }
          assert.deepEqual(
            (await ctx.store.sessionsDueForExpiry(iso(60_001), 1000)).filter((id) => ours.has(id)),
            [],
          );
        });
      });

      describe('getMessage and listMessages', () => {
        it('getMessage finds a message only through its own tenant and session', async () => {
          const tenantId = await tenant();
          const stranger = await tenant();
          const { record, fence } = await createSession(tenantId);
          const sibling = await createSession(tenantId);
          const m = message(newId('turn'), 'user', 'Hi');
          const at = new Date().toISOString();
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            at,
            messages: [m],
            patch: { snapshot: '{}' },
          });
          const [expected] = stored(record.id, at, [m]);
          assert.deepEqual(await ctx.store.getMessage(tenantId, record.id, m.id), expected);
          assert.equal(await ctx.store.getMessage(stranger, record.id, m.id), null);
          assert.equal(await ctx.store.getMessage(tenantId, sibling.record.id, m.id), null);
          assert.equal(await ctx.store.getMessage(tenantId, record.id, newId('msg')), null);
        });

        it("listMessages is null for another tenant's or an unknown session, and empty for a new one", async () => {
          const tenantId = await tenant();
          const stranger = await tenant();
          const { record, fence } = await createSession(tenantId);
          assert.deepEqual(await ctx.store.listMessages(tenantId, record.id, all), {
            items: [],
            next_offset: null,
          });
          await ctx.store.commitSession({
            session_id: record.id,
            fence,
            messages: [message(newId('turn'), 'user', 'Hi')],
            patch: { snapshot: '{}' },
          });
          assert.equal(await ctx.store.listMessages(stranger, record.id, all), null);
          assert.equal(await ctx.store.listMessages(tenantId, newId('ses'), all), null);
          assert.equal((await ctx.store.listMessages(tenantId, record.id, all))?.items.length, 1);
        });
      });
    });

    describe('feedback', () => {
      const ctx = useStore({ migrate: true });
      const { createSession } = sessionHelpers(ctx);

      /** A session of a fresh tenant: feedback belongs to a conversation. */
      async function session() {
        const tenantId = (await ctx.store.createTenant(unique('t'), 'Tenant')).id;
        return (await createSession(tenantId)).record;
      }

      it('the first upsert stores the feedback under the given id and getFeedback reads it back', async () => {
        const { id: sessionId } = await session();
        const id = newId('fb');
        const stored = await ctx.store.upsertFeedback(sessionId, {
          id,
          score: 9,
          comment: 'Quick and friendly',
          metadata: { source: 'widget' },
        });
        const expected: Feedback = {
          id,
          session_id: sessionId,
          score: 9,
          comment: 'Quick and friendly',
          metadata: { source: 'widget' },
          submitted_at: stored.submitted_at,
        };
        assert.deepEqual(stored, expected);
        assert.match(stored.submitted_at, isoInstant);
        assert.deepEqual(await ctx.store.getFeedback(sessionId), expected);
      });

      it('a later upsert replaces score, comment and metadata but keeps the first id', async () => {
        const { id: sessionId } = await session();
        const first = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 9,
          comment: 'Great',
          metadata: { a: 1, keep: 'no' },
        });
        const replaced = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 2,
          comment: 'Actually, it never shipped',
          metadata: { b: 2 },
        });
        // metadata is replaced as a whole, not merged; the id passed the second time is ignored.
        const expected: Feedback = {
          id: first.id,
          session_id: sessionId,
          score: 2,
          comment: 'Actually, it never shipped',
          metadata: { b: 2 },
          submitted_at: replaced.submitted_at,
        };
        assert.deepEqual(replaced, expected);
        assert.deepEqual(await ctx.store.getFeedback(sessionId), expected);
        // And again: still the first id.
        const third = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 10,
          comment: null,
          metadata: {},
        });
        assert.equal(third.id, first.id);
        assert.equal((await ctx.store.getFeedback(sessionId))?.id, first.id);
      });

      it('a later upsert moves submitted_at forward', async () => {
        const { id: sessionId } = await session();
        const first = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 5,
          comment: null,
          metadata: {},
        });
        await pastInstant(first.submitted_at);
        const second = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 6,
          comment: null,
          metadata: {},
        });
        assert.match(second.submitted_at, isoInstant);
        assert.ok(second.submitted_at > first.submitted_at, `${second.submitted_at} > ${first.submitted_at}`);
        assert.equal((await ctx.store.getFeedback(sessionId))?.submitted_at, second.submitted_at);
      });

      it('the feedback of two sessions is independent', async () => {
        const tenantId = (await ctx.store.createTenant(unique('t'), 'Tenant')).id;
        const one = (await createSession(tenantId)).record.id;
        const two = (await createSession(tenantId)).record.id;
        const a = await ctx.store.upsertFeedback(one, {
          id: newId('fb'),
          score: 0,
          comment: 'Bad',
          metadata: {},
        });
        const b = await ctx.store.upsertFeedback(two, {
          id: newId('fb'),
          score: 10,
          comment: 'Good',
          metadata: { n: 2 },
        });
        assert.notEqual(a.id, b.id);
        assert.equal(a.session_id, one);
        assert.equal(b.session_id, two);
        // Replacing one session's feedback leaves the other's alone.
        const replaced = await ctx.store.upsertFeedback(one, {
          id: newId('fb'),
          score: 7,
          comment: 'Better',
          metadata: {},
        });
        assert.equal(replaced.id, a.id);
        assert.deepEqual(await ctx.store.getFeedback(two), b);
        assert.deepEqual(await ctx.store.getFeedback(one), replaced);
      });

      it('getFeedback is null for a session without feedback and for an unknown session', async () => {
        const { id: sessionId } = await session();
        assert.equal(await ctx.store.getFeedback(sessionId), null);
        assert.equal(await ctx.store.getFeedback(newId('ses')), null);
        // Feedback on another session does not show through.
        const other = await session();
        await ctx.store.upsertFeedback(other.id, { id: newId('fb'), score: 8, comment: null, metadata: {} });
        assert.equal(await ctx.store.getFeedback(sessionId), null);
      });

      it('a null comment round-trips, both first and as the replacement of a comment', async () => {
        const { id: sessionId } = await session();
        const first = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 4,
          comment: null,
          metadata: {},
        });
        assert.equal(first.comment, null);
        assert.equal((await ctx.store.getFeedback(sessionId))?.comment, null);
        await ctx.store.upsertFeedback(sessionId, { id: newId('fb'), score: 4, comment: 'Hm', metadata: {} });
        assert.equal((await ctx.store.getFeedback(sessionId))?.comment, 'Hm');
        const cleared = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 4,
          comment: null,
          metadata: {},
        });
        assert.equal(cleared.comment, null);
        assert.equal((await ctx.store.getFeedback(sessionId))?.comment, null);
        // An empty comment is a comment, not a missing one.
        await ctx.store.upsertFeedback(sessionId, { id: newId('fb'), score: 4, comment: '', metadata: {} });
        assert.equal((await ctx.store.getFeedback(sessionId))?.comment, '');
      });

      it('metadata round-trips, nested values, arrays, nulls and non-ASCII text included', async () => {
        const { id: sessionId } = await session();
        const metadata = {
          page: '/checkout',
          tags: ['nps', 'é', '"quoted"'],
          nested: { n: 1.5, ok: false, none: null, deeper: { list: [1, [2, 3]] } },
          emoji: '👍',
        };
        const stored = await ctx.store.upsertFeedback(sessionId, {
          id: newId('fb'),
          score: 8,
          comment: 'Zügig 👍',
          metadata,
        });
        assert.deepEqual(stored.metadata, metadata);
        assert.equal(stored.comment, 'Zügig 👍');
        assert.deepEqual((await ctx.store.getFeedback(sessionId))?.metadata, metadata);
        // An empty object replaces it and round-trips as such.
        await ctx.store.upsertFeedback(sessionId, { id: newId('fb'), score: 8, comment: null, metadata: {} });
        assert.deepEqual((await ctx.store.getFeedback(sessionId))?.metadata, {});
      });
    });
  });
}
