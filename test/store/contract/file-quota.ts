// Store contract: upload quotas (docs/internals/decisions.md#upload-quotas): createFile with a quota counts
// the conversation's and the tenant's stored files in its own transaction, refuses what does not fit with its
// 413, and stores nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../../src/errors.ts';
import type { FileQuota, NewFile } from '../../../src/store/store.ts';
import { newTenant, type OpenStore, sessionHelpers, unique, useStore } from './support.ts';

const roomy: FileQuota = { conversationFiles: 1000, conversationBytes: 1_000_000, tenantBytes: 0 };

const newFile = (session_id: string | null = null): NewFile => ({
  id: unique('file'),
  name: 'notes.txt',
  mime_type: 'text/plain',
  metadata: {},
  session_id,
});

const refusedWith = (code: string, context: Record<string, unknown>) => (err: unknown) => {
  assert.ok(err instanceof AppError, String(err));
  assert.equal(err.code, code);
  assert.equal(err.statusCode, 413);
  assert.deepEqual(err.context, context);
  return true;
};

export function fileQuotas(open: OpenStore): void {
  describe('file quotas', () => {
    const ctx = useStore(open, { migrate: true });
    const { createSession } = sessionHelpers(ctx);
    const bytes = (n: number) => Buffer.alloc(n, 'a');
    const count = async (tenantId: string, session_id?: string) =>
      (await ctx.store.listFiles(tenantId, { session_id }, { limit: 100, offset: 0 })).items.length;

    it("refuses a file past a conversation's file count or bytes, storing nothing", async () => {
      const tenantId = await newTenant(ctx);
      const { record } = await createSession(tenantId);
      const quota = { ...roomy, conversationFiles: 2, conversationBytes: 100 };
      /** Uploads `size` bytes to the conversation, expecting the 413 with that usage. */
      const refused = (size: number, used_files: number, used_bytes: number) =>
        assert.rejects(
          ctx.store.createFile(tenantId, newFile(record.id), bytes(size), quota),
          refusedWith('conversation_file_quota', {
            conversation_id: record.id,
            limit_files: 2,
            used_files,
            limit_bytes: 100,
            used_bytes,
            file_bytes: size,
          }),
        );
      await ctx.store.createFile(tenantId, newFile(record.id), bytes(30), quota);
      await refused(71, 1, 30);
      await ctx.store.createFile(tenantId, newFile(record.id), bytes(70), quota);
      await refused(1, 2, 100);
      assert.equal(await count(tenantId, record.id), 2);
      // The pool and other conversations have their own room.
      await ctx.store.createFile(tenantId, newFile(null), bytes(500), quota);
      await ctx.store.createFile(
        tenantId,
        newFile((await createSession(tenantId)).record.id),
        bytes(1),
        quota,
      );
    });

    it('counts the whole tenant against its bytes, other tenants apart, and deleted files not at all', async () => {
      const tenantId = await newTenant(ctx);
      const { record } = await createSession(tenantId);
      const quota = { ...roomy, tenantBytes: 100 };
      const pooled = await ctx.store.createFile(tenantId, newFile(null), bytes(60), quota);
      await ctx.store.createFile(tenantId, newFile(record.id), bytes(30), quota);
      for (const session of [null, record.id]) {
        await assert.rejects(
          ctx.store.createFile(tenantId, newFile(session), bytes(11), quota),
          refusedWith('tenant_file_quota', { limit_bytes: 100, used_bytes: 90, file_bytes: 11 }),
        );
      }
      assert.equal(await count(tenantId), 2);
      await ctx.store.createFile(await newTenant(ctx), newFile(null), bytes(100), quota);

      assert.equal(await ctx.store.deleteFile(tenantId, pooled.id), true);
      await ctx.store.createFile(tenantId, newFile(record.id), bytes(70), quota);
      assert.equal(await count(tenantId), 2);
    });

    it('a tenant bytes quota of 0 and no quota at all both mean no limit', async () => {
      const tenantId = await newTenant(ctx);
      await ctx.store.createFile(tenantId, newFile(null), bytes(5000), roomy);
      await ctx.store.createFile(tenantId, newFile(null), bytes(5000));
      assert.equal(await count(tenantId), 2);
    });

    it('lets only as many uploads made at once as fit in the room left', async () => {
      const tenantId = await newTenant(ctx);
      const { record } = await createSession(tenantId);
      const quota = { ...roomy, conversationFiles: 3, tenantBytes: 250 };
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          ctx.store.createFile(tenantId, newFile(i % 2 ? record.id : null), bytes(50), quota),
        ),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
      for (const r of results) {
        if (r.status === 'rejected') assert.ok(r.reason instanceof AppError && r.reason.statusCode === 413);
      }
      assert.equal(await count(tenantId), 5);
      assert.ok((await count(tenantId, record.id)) <= 3);
    });
  });
}
