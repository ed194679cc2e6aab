// The Store contract: one suite that every Store implementation must pass, so that SQLite and PostgreSQL
// behave alike behind the API. An implementation's test file calls storeContract with a factory.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { AppError } from '../../src/errors.ts';
import type { NewApiKey, NewFile, Store, StoredFile, User } from '../../src/store/store.ts';

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
  });
}
