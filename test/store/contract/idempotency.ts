// Store contract: Idempotency-Key records written by session commits, replaced, answered and expired.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import type { IdempotencyRecord } from '../../../src/store/store.ts';
import type { SessionFixture } from './support.ts';

export function idempotencyRecords(f: SessionFixture): void {
  const { ctx, tenant, createSession, message, after } = f;
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
}
