// Store contract: commitSession: appended messages, patches, fencing, and writes that change nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { shardOf } from '../../../src/shards.ts';
import {
  type ContentBlock,
  fullUsage,
  type MessageRecord,
  type SessionRecord,
} from '../../../src/store/store.ts';
import { isoInstant, type SessionFixture } from './support.ts';

export function commitSession(f: SessionFixture): void {
  const { ctx, tenant, claim, newSession, createSession, message, stored, isStale, snapshotOf, all, after } =
    f;
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
        webhook_deliveries: 0,
        webhook_refused: 0,
        events_count: 0,
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

      const expected = [...stored(record.id, at1, first), ...stored(record.id, result2.updated_at, second)];
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

    it("keeps an assistant message's stop_reason and usage, and reads them as null where none were given", async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const question = message(turn, 'user', 'Tell me everything');
      const cut = {
        ...message(turn, 'assistant', 'Everything starts'),
        stop_reason: 'max_tokens' as const,
        usage: { input_tokens: 1234, output_tokens: 2 },
      };
      // Reasons the tool steps will add are stored as they are too.
      const stepped = {
        ...message(turn, 'assistant', 'Out of steps'),
        stop_reason: 'max_steps' as const,
        usage: { input_tokens: 0, output_tokens: 0 },
      };
      const authored = { ...message(turn, 'assistant', 'A colleague'), stop_reason: null, usage: null };
      const messages = [question, cut, stepped, authored];
      const at = new Date().toISOString();
      const result = await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        messages,
        patch: { snapshot: '{"step":1}' },
      });
      const expected = stored(record.id, at, messages);
      assert.deepEqual(result.messages, expected);
      assert.deepEqual(
        expected.map((m) => [m.stop_reason, m.usage]),
        [
          [null, null],
          ['max_tokens', fullUsage({ input_tokens: 1234, output_tokens: 2 })],
          ['max_steps', fullUsage({ input_tokens: 0, output_tokens: 0 })],
          [null, null],
        ],
      );
      assert.deepEqual((await ctx.store.listMessages(tenantId, record.id, all))?.items, expected);
      assert.deepEqual(await ctx.store.turnMessages(record.id, turn), expected);
      assert.deepEqual(await ctx.store.recentMessages(record.id, 10, Number.MAX_SAFE_INTEGER), expected);
      for (const m of expected) {
        assert.deepEqual(await ctx.store.getMessage(tenantId, record.id, m.id), m);
      }
    });

    it('recentMessages returns the last messages, oldest first, back as far as their characters allow', async () => {
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
      const any = Number.MAX_SAFE_INTEGER;
      assert.deepEqual(texts(await ctx.store.recentMessages(record.id, 2, any)), ['four', 'five']);
      assert.deepEqual(texts(await ctx.store.recentMessages(record.id, 4, any)), [
        'two',
        'three',
        'four',
        'five',
      ]);
      assert.deepEqual(await ctx.store.recentMessages(record.id, 10, any), stored(record.id, at, messages));
      assert.deepEqual(await ctx.store.recentMessages(newId('ses'), 10, any), []);
      // Content is counted as stored: [{"type":"text","text":"four"}] is 31 characters, "five" as many.
      assert.deepEqual(texts(await ctx.store.recentMessages(record.id, 10, 62)), ['four', 'five']);
      assert.deepEqual(texts(await ctx.store.recentMessages(record.id, 10, 61)), ['five']);
      assert.deepEqual(
        texts(await ctx.store.recentMessages(record.id, 10, 1)),
        ['five'],
        'the newest always',
      );
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
      assert.deepEqual(result, {
        messages: [],
        messages_count: 0,
        updated_at: at,
        webhook_deliveries: 0,
        webhook_refused: 0,
        events_count: 0,
      });
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
      // Six shards, not six random ids: a session created on a shard another one had just claimed would
      // make that one's fence stale too (about one run in 70 drew two alike and failed).
      const shards = new Map<number, string>();
      while (shards.size < 6) {
        const id = newId('ses');
        shards.set(shardOf(id), id);
      }
      const batch = await Promise.all([...shards.values()].map((id) => createSession(tenantId, { id })));
      const fenced = batch[2];
      assert.ok(fenced);
      const current = await claim(fenced.record.shard);
      // A seventh session on the fenced shard, created under the new epoch, commits among them: only
      // the fenced session keeps the old fence.
      let sibling = newId('ses');
      while (shardOf(sibling) !== fenced.record.shard) sibling = newId('ses');
      const record = await ctx.store.createSession(tenantId, newSession({ id: sibling }), current);
      const sessions = [...batch, { record, fence: current }];
      const outcomes = await Promise.allSettled(
        sessions.map((s) =>
          ctx.store.commitSession({
            session_id: s.record.id,
            fence: s.fence,
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
          assert.equal(outcome.status, 'fulfilled', String(outcome.status === 'rejected' && outcome.reason));
          assert.deepEqual(
            page?.items.map((m) => m.content),
            [[{ type: 'text', text: `to ${s.record.id}` }]],
          );
        }
      }
    });
  });
}
