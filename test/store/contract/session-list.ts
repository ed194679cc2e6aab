// Store contract: the session list's cursor (stable under inserts, newest first, beside the offset) and its
// filters for an operator console: who handles the session, a call waiting for a decision, the user's
// reference and the last change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { decodeSessionCursor } from '../../../src/store/session-list.ts';
import type { SessionFilter, SessionPageRequest } from '../../../src/store/store.ts';
import { type SessionFixture, unique } from './support.ts';

export function sessionList(f: SessionFixture): void {
  const { ctx, tenant, claim, createSession, createSessions, all, after } = f;

  describe('listSessions: cursor and console filters', () => {
    it('pages by cursor newest first, and sessions created meanwhile neither shift nor repeat a page', async () => {
      const tenantId = await tenant();
      const sessions = (await createSessions(tenantId, [{}, {}, {}, {}, {}])).reverse();
      const ids = (page: { items: { id: string }[] }) => page.items.map((s) => s.id);
      const first = await ctx.store.listSessions(tenantId, {}, { limit: 2, offset: 0 });
      assert.deepEqual(ids(first), ids({ items: sessions.slice(0, 2) }));
      assert.equal(first.next_offset, 2);
      assert.ok(first.next_cursor);
      // New sessions arrive: an offset would now repeat sessions, the cursor does not.
      await createSessions(tenantId, [{}, {}]);
      const page = (cursor: string): SessionPageRequest => {
        const decoded = decodeSessionCursor(cursor);
        assert.ok(decoded, cursor);
        return { limit: 2, offset: 0, after: decoded };
      };
      const second = await ctx.store.listSessions(tenantId, {}, page(first.next_cursor));
      assert.deepEqual(ids(second), ids({ items: sessions.slice(2, 4) }));
      assert.equal(second.next_offset, null, 'paging by cursor has no offset');
      assert.ok(second.next_cursor);
      const third = await ctx.store.listSessions(tenantId, {}, page(second.next_cursor));
      assert.deepEqual(ids(third), ids({ items: sessions.slice(4) }));
      assert.equal(third.next_cursor, null);
    });

    it('pages by cursor through sessions created in the same millisecond, each once', async () => {
      const tenantId = await tenant();
      const made = [];
      for (let i = 0; i < 5; i++) made.push((await createSession(tenantId)).record);
      const seen: string[] = [];
      let request: SessionPageRequest = { limit: 2, offset: 0 };
      for (;;) {
        const result = await ctx.store.listSessions(tenantId, {}, request);
        seen.push(...result.items.map((s) => s.id));
        if (!result.next_cursor) break;
        const decoded = decodeSessionCursor(result.next_cursor);
        assert.ok(decoded);
        request = { limit: 2, offset: 0, after: decoded };
      }
      assert.deepEqual(
        seen,
        (await ctx.store.listSessions(tenantId, {}, all)).items.map((s) => s.id),
      );
      assert.deepEqual(seen.toSorted(), made.map((s) => s.id).toSorted());
    });

    it('filters by who handles the session, a waiting approval, the user reference and the last change', async () => {
      const tenantId = await tenant();
      const ann = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:ann' });
      const [plain, handed, waiting, expired, anns] = await createSessions(tenantId, [
        {},
        {},
        {},
        {},
        { user_id: ann.id },
      ]);
      assert.ok(plain && handed && waiting && expired && anns);
      const start = Date.now();
      const commit = async (id: string, shard: number, fields: object) =>
        ctx.store.commitSession({
          session_id: id,
          fence: await claim(shard),
          patch: { snapshot: '{}' },
          ...fields,
        });
      await commit(handed.id, handed.shard, {
        at: after(start, 60_000),
        patch: {
          snapshot: '{}',
          handoff: { requested_at: after(start, 60_000), reason: null, by: 'integrator' },
        },
      });
      const toolCall = (expires_at: string) => ({
        id: newId('call'),
        turn_id: newId('turn'),
        step: 1,
        position: 0,
        name: 'refund',
        input: {},
        step_text: null,
        step_usage: null,
        approval: { approver: 'operator' as const, expires_at },
      });
      await commit(waiting.id, waiting.shard, { toolCalls: [toolCall(after(start, 3_600_000))] });
      // Its time ran out: it counts as denied, not as waiting.
      await commit(expired.id, expired.shard, { toolCalls: [toolCall(after(start, -1_000))] });
      const ids = async (filter: SessionFilter) =>
        (await ctx.store.listSessions(tenantId, filter, all)).items.map((s) => s.id);
      assert.deepEqual(await ids({ handled_by: 'humans' }), [handed.id]);
      assert.deepEqual(await ids({ handled_by: 'agent' }), [anns.id, expired.id, waiting.id, plain.id]);
      assert.deepEqual(await ids({ pending_approval: true }), [waiting.id]);
      assert.deepEqual(await ids({ pending_approval: false }), [anns.id, expired.id, handed.id, plain.id]);
      assert.deepEqual(await ids({ user_reference: 'crm:ann' }), [anns.id]);
      assert.deepEqual(await ids({ user_reference: 'crm:nobody' }), []);
      assert.deepEqual(await ids({ updated_after: after(start, 30_000) }), [handed.id]);
      assert.deepEqual(await ids({ updated_after: after(start, 60_000) }), []);
      assert.deepEqual(await ids({ handled_by: 'agent', pending_approval: true }), [waiting.id]);
    });
  });
}
