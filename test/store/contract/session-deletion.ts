// Store contract: finding a tenant's sessions by age, deleting a session with everything it holds (fenced), and
// a session's newest token, replaced only by showing the one before it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../../src/errors.ts';
import { newId } from '../../../src/ids.ts';
import type { SessionFixture } from './support.ts';

export function sessionsByAge(f: SessionFixture): void {
  const { ctx, tenant, createSessions, after } = f;
  describe('sessionsCreatedBefore', () => {
    it("returns the tenant's sessions created before the instant, oldest first, up to the limit and in the shards", async () => {
      const tenantId = await tenant();
      const other = await tenant();
      const [first, second, third] = await createSessions(tenantId, [{}, {}, {}]);
      assert.ok(first && second && third);
      await createSessions(other, [{}]);
      const found = await ctx.store.sessionsCreatedBefore(tenantId, third.created_at, 100);
      assert.deepEqual(found, [first.id, second.id]);
      assert.deepEqual(await ctx.store.sessionsCreatedBefore(tenantId, third.created_at, 1), [first.id]);
      const later = after(Date.parse(third.created_at), 1);
      assert.deepEqual(await ctx.store.sessionsCreatedBefore(tenantId, later, 100), [
        first.id,
        second.id,
        third.id,
      ]);
      assert.deepEqual(
        await ctx.store.sessionsCreatedBefore(tenantId, later, 100, [second.shard]),
        [first, second, third].filter((s) => s.shard === second.shard).map((s) => s.id),
      );
      assert.deepEqual(await ctx.store.sessionsCreatedBefore(tenantId, later, 100, []), []);
    });
  });
}

export function deleteSession(f: SessionFixture): void {
  const { ctx, tenant, createSession, claim, message, isStale } = f;

  /** A session holding one of everything a session can hold, and its fence. */
  async function fullSession(tenantId: string) {
    const { record, fence } = await createSession(tenantId);
    const turn = newId('turn');
    const user = message(turn, 'user', 'Hello');
    await ctx.store.commitSession({
      session_id: record.id,
      fence,
      patch: { snapshot: '{}' },
      messages: [user, message(turn, 'assistant', 'Hi')],
      events: [
        { type: 'message.created', data: { id: user.id } },
        { type: 'turn.started', data: { turn_id: turn } },
      ],
      idempotency: {
        key: 'k1',
        fingerprint: 'sha256:x',
        turn_id: turn,
        user_message_id: user.id,
        expires_at: f.inAnHour(),
      },
      toolCalls: [
        {
          id: 'call_1',
          turn_id: turn,
          step: 1,
          position: 0,
          name: 'lookup',
          input: {},
          step_text: null,
          step_usage: null,
        },
      ],
    });
    await ctx.store.upsertFeedback(record.id, { id: newId('fb'), score: 7, comment: null, metadata: {} });
    const file = await ctx.store.createFile(
      tenantId,
      { id: newId('file'), name: 'a.txt', mime_type: 'text/plain', metadata: {}, session_id: record.id },
      Buffer.from('contents'),
    );
    assert.equal(await ctx.store.replaceSessionToken(record.id, null, 'tok_1'), true);
    return { record, fence, turn, file };
  }

  describe('deleteSession', () => {
    it('deletes the session with its messages, tool calls, keys, feedback, files, token and event log, and nothing else', async () => {
      const tenantId = await tenant();
      const doomed = await fullSession(tenantId);
      const kept = await fullSession(tenantId);
      assert.equal(await ctx.store.deleteSession(doomed.record.id, doomed.fence), true);

      const id = doomed.record.id;
      assert.equal(await ctx.store.getSession(tenantId, id), null);
      assert.equal(await ctx.store.loadSession(id), null);
      assert.equal(await ctx.store.listMessages(tenantId, id, { limit: 10, offset: 0 }), null);
      assert.deepEqual(await ctx.store.turnToolCalls(id, doomed.turn), []);
      assert.equal(await ctx.store.getIdempotencyRecord(id, 'k1'), null);
      assert.equal(await ctx.store.getFeedback(id), null);
      assert.equal(await ctx.store.getFile(tenantId, doomed.file.id), null);
      assert.equal(await ctx.store.replaceSessionToken(id, 'tok_1', 'tok_2'), false);
      assert.deepEqual(await ctx.store.sessionEvents(id, 0, 10), []);

      // The other session keeps everything.
      assert.equal((await ctx.store.getSession(tenantId, kept.record.id))?.messages_count, 2);
      assert.equal((await ctx.store.turnToolCalls(kept.record.id, kept.turn)).length, 1);
      assert.ok(await ctx.store.getFeedback(kept.record.id));
      assert.ok(await ctx.store.getFile(tenantId, kept.file.id));
      assert.equal(await ctx.store.replaceSessionToken(kept.record.id, 'tok_1', 'tok_2'), true);
      assert.equal((await ctx.store.sessionEvents(kept.record.id, 0, 10)).length, 2);
    });

    it('makes a later commit to the deleted session throw session_not_found, writing nothing', async () => {
      const tenantId = await tenant();
      const { record, fence } = await fullSession(tenantId);
      assert.equal(await ctx.store.deleteSession(record.id, fence), true);
      await assert.rejects(
        ctx.store.commitSession({
          session_id: record.id,
          fence,
          messages: [
            {
              id: newId('msg'),
              role: 'user',
              content: [{ type: 'text', text: 'late' }],
              metadata: null,
              turn_id: newId('turn'),
            },
          ],
          patch: { snapshot: '{}' },
        }),
        (err: unknown) =>
          err instanceof AppError && err.code === 'session_not_found' && err.statusCode === 404,
      );
      assert.equal(await ctx.store.loadSession(record.id), null);
    });

    it('under a stale fence throws StaleEpochError and deletes nothing; an unknown session is false', async () => {
      const tenantId = await tenant();
      const { record, fence } = await fullSession(tenantId);
      await claim(record.shard);
      await assert.rejects(ctx.store.deleteSession(record.id, fence), isStale(record.shard));
      assert.equal((await ctx.store.getSession(tenantId, record.id))?.messages_count, 2);
      // A fence of another shard proves nothing about this session's.
      const elsewhere = await claim((record.shard + 1) % 1024);
      await assert.rejects(ctx.store.deleteSession(record.id, elsewhere), isStale(record.shard));
      assert.equal(await ctx.store.deleteSession(newId('ses'), await claim(record.shard)), false);
    });
  });

  describe('replaceSessionToken', () => {
    it('records the first token, then replaces it only when shown the newest one', async () => {
      const tenantId = await tenant();
      const { record } = await createSession(tenantId);
      assert.equal(await ctx.store.replaceSessionToken(record.id, 'tok_none', 'tok_1'), false);
      assert.equal(await ctx.store.replaceSessionToken(record.id, null, 'tok_1'), true);
      assert.equal(await ctx.store.replaceSessionToken(record.id, null, 'tok_x'), false);
      assert.equal(await ctx.store.replaceSessionToken(record.id, 'tok_1', 'tok_2'), true);
      // The one before the newest no longer replaces it.
      assert.equal(await ctx.store.replaceSessionToken(record.id, 'tok_1', 'tok_3'), false);
      assert.equal(await ctx.store.replaceSessionToken(record.id, 'tok_2', 'tok_3'), true);
      // Of two replacements showing the same token, one wins.
      const both = await Promise.all([
        ctx.store.replaceSessionToken(record.id, 'tok_3', 'tok_4a'),
        ctx.store.replaceSessionToken(record.id, 'tok_3', 'tok_4b'),
      ]);
      assert.deepEqual(both.toSorted(), [false, true]);
      assert.equal(await ctx.store.replaceSessionToken(newId('ses'), null, 'tok_1'), false);
    });
  });
}
