// Store contract: a conversation's one feedback, replaced in place.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import type { Feedback } from '../../../src/store/store.ts';
import { isoInstant, type OpenStore, pastInstant, sessionHelpers, unique, useStore } from './support.ts';

export function feedback(open: OpenStore): void {
  describe('feedback', () => {
    const ctx = useStore(open, { migrate: true });
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

    it('feedbackOf reads the feedback of several sessions at once, leaving out those without', async () => {
      const [a, b, none] = [await session(), await session(), await session()];
      const fa = await ctx.store.upsertFeedback(a.id, {
        id: newId('fb'),
        score: 3,
        comment: null,
        metadata: {},
      });
      const fb = await ctx.store.upsertFeedback(b.id, {
        id: newId('fb'),
        score: 10,
        comment: 'Yes',
        metadata: {},
      });
      const read = await ctx.store.feedbackOf([a.id, b.id, none.id]);
      assert.deepEqual(
        read.toSorted((x, y) => x.score - y.score),
        [fa, fb],
      );
      assert.deepEqual(await ctx.store.feedbackOf([none.id]), []);
      assert.deepEqual(await ctx.store.feedbackOf([]), []);
    });
  });
}
