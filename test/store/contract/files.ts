// Store contract: the file pool: records and bytes, tenant isolation, list filters and paging.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import type { FileFilter, NewFile, StoredFile } from '../../../src/store/store.ts';
import { isoInstant, type OpenStore, pastInstant, sessionHelpers, unique, useStore } from './support.ts';

export function files(open: OpenStore): void {
  describe('files', () => {
    const ctx = useStore(open, { migrate: true });
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

      it("an agent scope lists pool files and its agents' conversations' files only, paged by them", async () => {
        const tenantId = await tenant();
        const sales = (await createSession(tenantId, { agent_id: 'sales' })).record.id;
        const support = (await createSession(tenantId, { agent_id: 'support' })).record.id;
        await createFiles(tenantId, [
          { name: 'sales-1.txt', session_id: sales },
          { name: 'pool.txt', session_id: null },
          { name: 'support.txt', session_id: support },
          { name: 'sales-2.txt', session_id: sales },
        ]);
        const list = async (filter: FileFilter) => names(await ctx.store.listFiles(tenantId, filter, all));

        assert.deepEqual(await list({ agent_ids: ['sales'] }), ['sales-2.txt', 'pool.txt', 'sales-1.txt']);
        assert.deepEqual(await list({ agent_ids: ['support', 'other'] }), ['support.txt', 'pool.txt']);
        assert.deepEqual(await list({ agent_ids: [] }), ['pool.txt'], 'a scope of no agents: the pool only');
        assert.deepEqual(await list({ agent_ids: ['sales'], session_id: support }), []);
        assert.deepEqual(await list({ agent_ids: ['sales'], name: 'SALES-1' }), ['sales-1.txt']);
        assert.equal((await list({ agent_ids: undefined })).length, 4, 'undefined: every agent');
        const page = await ctx.store.listFiles(tenantId, { agent_ids: ['sales'] }, { limit: 2, offset: 0 });
        assert.deepEqual([names(page), page.next_offset], [['sales-2.txt', 'pool.txt'], 2]);
      });

      it('pages carry next_offset until no item follows, even after a full last page', async () => {
        const tenantId = await tenant();
        const files = (await createFiles(tenantId, [{}, {}, {}, {}, {}])).reverse();
        const list = (limit: number, offset: number) => ctx.store.listFiles(tenantId, {}, { limit, offset });

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
}
