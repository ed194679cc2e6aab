// Store contract: who handles a session (handled_by, handoff) and an operator's author, as commits set them,
// and messages read by id;
// the session's event log, numbered per session in the commits that append to it (a commit's events stored
// together), read after any seq, even one inside a commit, and refused with everything else when the fence
// is stale.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import type { SessionFixture } from './support.ts';

export function humansAndEvents(f: SessionFixture): void {
  const { ctx, tenant, createSession, message, isStale } = f;
  describe('handoffs, authors and the session event log', () => {
    it('sets handled_by and handoff with a patch naming them, and keeps them under the patches that do not', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      assert.equal(record.handled_by, 'agent');
      assert.equal(record.handoff, null);
      const handoff = { requested_at: '2026-03-02T09:00:00.000Z', reason: 'VIP', by: 'integrator' as const };
      await ctx.store.commitSession({ session_id: record.id, fence, patch: { handoff, snapshot: '{}' } });
      await ctx.store.commitSession({ session_id: record.id, fence, patch: { snapshot: '{"n":2}' } });
      const handed = await ctx.store.getSession(tenantId, record.id);
      assert.deepEqual([handed?.handled_by, handed?.handoff], ['humans', handoff]);
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        patch: { handoff: null, snapshot: '{}' },
      });
      const back = await ctx.store.getSession(tenantId, record.id);
      assert.deepEqual([back?.handled_by, back?.handoff], ['agent', null]);
    });

    it("stores an operator's author on its message and reads it back; other messages read null", async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const author = { id: 'op_1', name: 'Ana' };
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        messages: [message(turn, 'user', 'hi'), { ...message(turn, 'assistant', 'hello'), author }],
        patch: { snapshot: '{}' },
      });
      const listed = await ctx.store.listMessages(tenantId, record.id, { limit: 10, offset: 0 });
      assert.deepEqual(
        listed?.items.map((m) => m.author),
        [null, author],
      );
      // messagesById reads a session's messages by id, in order, and no other session's.
      const ids = listed?.items.map((m) => m.id) ?? [];
      assert.deepEqual(await ctx.store.messagesById(record.id, [...ids].reverse()), listed?.items);
      assert.deepEqual(
        await ctx.store.messagesById(record.id, [ids[1] ?? '', 'msg_nope']),
        listed?.items.slice(1),
      );
      const other = await createSession(tenantId);
      assert.deepEqual(await ctx.store.messagesById(other.record.id, ids), []);
    });

    it('numbers events on per session across commits, and reads them after any seq, oldest first', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const other = await createSession(tenantId);
      const at = '2026-03-02T09:00:00.000Z';
      const one = await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        patch: { snapshot: '{}' },
        events: [
          { type: 'a', data: { n: 1 } },
          { type: 'b', data: { n: 2, nested: { ok: true } } },
        ],
      });
      assert.equal(one.events_count, 2);
      await ctx.store.commitSession({
        session_id: other.record.id,
        fence: other.fence,
        patch: { snapshot: '{}' },
        events: [{ type: 'x', data: {} }],
      });
      const none = await ctx.store.commitSession({ session_id: record.id, fence, patch: { snapshot: '{}' } });
      assert.equal(none.events_count, 2);
      const two = await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        patch: { snapshot: '{}' },
        events: [{ type: 'c', data: [3] }],
      });
      assert.equal(two.events_count, 3);
      assert.deepEqual(await ctx.store.sessionEvents(record.id, 0, 10), [
        { seq: 1, type: 'a', data: { n: 1 }, created_at: at },
        { seq: 2, type: 'b', data: { n: 2, nested: { ok: true } }, created_at: at },
        { seq: 3, type: 'c', data: [3], created_at: at },
      ]);
      assert.deepEqual(
        (await ctx.store.sessionEvents(record.id, 1, 1)).map((e) => e.seq),
        [2],
      );
      assert.deepEqual(await ctx.store.sessionEvents(record.id, 3, 10), []);
      assert.deepEqual(
        (await ctx.store.sessionEvents(other.record.id, 0, 10)).map((e) => e.type),
        ['x'],
      );
    });

    it("reads a commit's events singly: after a seq inside it only those past it, and a limit cuts inside it", async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const at = '2026-03-02T09:00:00.000Z';
      const commit = (types: string[]) =>
        ctx.store.commitSession({
          session_id: record.id,
          fence,
          at,
          patch: { snapshot: '{}' },
          events: types.map((type, i) => ({ type, data: { type, i } })),
        });
      assert.equal((await commit(['a', 'b', 'c'])).events_count, 3);
      assert.equal((await commit(['d'])).events_count, 4);
      assert.equal((await commit(['e', 'f'])).events_count, 6);
      const seqs = async (after: number, limit: number) =>
        (await ctx.store.sessionEvents(record.id, after, limit)).map((e) => `${e.seq}${e.type}`);
      assert.deepEqual(await seqs(0, 10), ['1a', '2b', '3c', '4d', '5e', '6f']);
      // After a seq inside the first commit: only its events past it, then the later commits'.
      assert.deepEqual(await seqs(1, 10), ['2b', '3c', '4d', '5e', '6f']);
      assert.deepEqual(await seqs(2, 10), ['3c', '4d', '5e', '6f']);
      assert.deepEqual(await seqs(5, 10), ['6f']);
      assert.deepEqual(await seqs(6, 10), []);
      // A limit that ends inside a commit, from its start, from inside it, and across commits.
      assert.deepEqual(await seqs(0, 2), ['1a', '2b']);
      assert.deepEqual(await seqs(1, 1), ['2b']);
      assert.deepEqual(await seqs(2, 3), ['3c', '4d', '5e']);
      assert.deepEqual(await seqs(0, 1), ['1a']);
      assert.deepEqual(await ctx.store.sessionEvents(record.id, 3, 2), [
        { seq: 4, type: 'd', data: { type: 'd', i: 0 }, created_at: at },
        { seq: 5, type: 'e', data: { type: 'e', i: 0 }, created_at: at },
      ]);
    });

    it('appends no event of a write refused for a stale fence', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const stale = { ...fence, epoch: fence.epoch - 1 };
      await assert.rejects(
        ctx.store.commitSession({
          session_id: record.id,
          fence: stale,
          patch: { snapshot: '{}' },
          events: [{ type: 'a', data: {} }],
        }),
        isStale(fence.shard),
      );
      assert.deepEqual(await ctx.store.sessionEvents(record.id, 0, 10), []);
    });
  });
}
