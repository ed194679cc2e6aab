// Store contract: usage counted by the commits that store the replies, exactly, per UTC day; the totals,
// the grouped reports and a budget's period read from it; budgets per user and the tenant's default.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import type { NewMessage, NewUsage, UsageTotals } from '../../../src/store/store.ts';
import { fullUsage, noTotals } from '../../../src/store/store.ts';
import type { SessionFixture } from './support.ts';

const usage = (input: number, output: number, more: Partial<NewUsage> = {}): NewUsage => ({
  input_tokens: input,
  output_tokens: output,
  model: 'm1',
  ...more,
});

/** What the replies among `messages` add up to, as totals. */
function sumOf(messages: readonly Pick<NewMessage, 'usage'>[]): UsageTotals {
  const totals = noTotals();
  for (const m of messages) {
    if (!m.usage) continue;
    const u = fullUsage(m.usage);
    totals.turns++;
    totals.input_tokens += u.input_tokens;
    totals.output_tokens += u.output_tokens;
    totals.cached_input_tokens += u.cached_input_tokens;
    totals.reasoning_tokens += u.reasoning_tokens;
    totals.cost_micro_usd += u.cost_micro_usd;
  }
  return totals;
}

export function usageAndBudgets(f: SessionFixture): void {
  const { ctx, tenant, createSession, message, isStale } = f;

  /** Commits a user message and a reply with `u` at `at`. */
  async function turn(s: Awaited<ReturnType<typeof createSession>>, at: string, u: NewUsage | null) {
    const turnId = newId('turn');
    const messages: NewMessage[] = [
      message(turnId, 'user', 'Hi'),
      { ...message(turnId, 'assistant', 'Hello'), stop_reason: 'end', usage: u },
    ];
    await ctx.store.commitSession({
      session_id: s.record.id,
      fence: s.fence,
      at,
      messages,
      patch: { snapshot: '{}' },
    });
    return messages;
  }

  describe('usage and budgets', () => {
    it('counts every reply once, exactly, in the totals of its session and its user and in every grouping', async () => {
      const tenantId = await tenant();
      const userId = newId('usr');
      await ctx.store.createUser(tenantId, userId, {});
      const a = await createSession(tenantId, { user_id: userId, agent_id: 'support' });
      const b = await createSession(tenantId, { user_id: null, agent_id: 'sales' });
      const written = [
        ...(await turn(
          a,
          '2026-03-01T23:59:59.999Z',
          usage(1000, 20, { cached_input_tokens: 400, cost_micro_usd: 1234 }),
        )),
        ...(await turn(
          a,
          '2026-03-02T00:00:00.000Z',
          usage(2_000_000_000, 7, { reasoning_tokens: 5, cost_micro_usd: 9_000_000_000 }),
        )),
        ...(await turn(b, '2026-03-02T10:00:00.000Z', usage(3, 4))),
        // An authored reply is no model call: not counted.
        ...(await turn(b, '2026-03-02T11:00:00.000Z', null)),
      ];
      const ofA = written.slice(0, 4);
      const ofB = written.slice(4);

      const sessions = await ctx.store.sessionUsage(tenantId, [a.record.id, b.record.id, 'ses_none']);
      assert.deepEqual(sessions.get(a.record.id), sumOf(ofA));
      assert.deepEqual(sessions.get(b.record.id), sumOf(ofB));
      assert.equal(sessions.has('ses_none'), false);
      assert.deepEqual((await ctx.store.userUsage(tenantId, [userId])).get(userId), sumOf(ofA));

      const report = (group_by: 'day' | 'agent' | 'user' | 'session') =>
        ctx.store.usageReport(tenantId, {
          from: '2026-03-01',
          to: '2026-03-31',
          group_by,
          limit: 10,
          offset: 0,
        });
      const day1 = sumOf(written.slice(0, 2));
      assert.deepEqual((await report('day')).items, [
        { key: '2026-03-01', ...day1 },
        { key: '2026-03-02', ...sumOf(written.slice(2)) },
      ]);
      assert.deepEqual((await report('agent')).items, [
        { key: 'sales', ...sumOf(ofB) },
        { key: 'support', ...sumOf(ofA) },
      ]);
      assert.deepEqual((await report('user')).items, [
        { key: userId, ...sumOf(ofA) },
        { key: null, ...sumOf(ofB) },
      ]);
      const bySession = (await report('session')).items;
      assert.deepEqual(
        bySession.map((r) => r.key),
        [a.record.id, b.record.id].sort(),
      );

      // Filters, the key's agents and paging.
      const only = (q: object) =>
        ctx.store.usageReport(tenantId, {
          from: '2026-03-02',
          to: '2026-03-02',
          group_by: 'day',
          limit: 10,
          offset: 0,
          ...q,
        });
      assert.deepEqual((await only({ agent_id: 'support' })).items, [
        { key: '2026-03-02', ...sumOf(written.slice(2, 4)) },
      ]);
      assert.deepEqual((await only({ user_id: userId })).items, [
        { key: '2026-03-02', ...sumOf(written.slice(2, 4)) },
      ]);
      assert.deepEqual((await only({ agent_ids: ['other'] })).items, []);
      const page1 = await ctx.store.usageReport(tenantId, {
        from: '2026-03-01',
        to: '2026-03-31',
        group_by: 'day',
        limit: 1,
        offset: 0,
      });
      assert.deepEqual([page1.items.length, page1.next_offset], [1, 1]);

      // A budget's period: from the first day of the period on.
      assert.deepEqual(
        await ctx.store.periodUsage(tenantId, { user_id: userId }, '2026-03-02'),
        sumOf(written.slice(2, 4)),
      );
      assert.deepEqual(
        await ctx.store.periodUsage(tenantId, { session_id: b.record.id }, '2026-03-01'),
        sumOf(ofB),
      );
    });

    it('counts nothing of a write that is refused', async () => {
      const tenantId = await tenant();
      const s = await createSession(tenantId);
      await ctx.store.claimShards('another-node', [s.fence.shard]);
      await assert.rejects(turn(s, new Date().toISOString(), usage(10, 10)), isStale(s.fence.shard));
      assert.equal((await ctx.store.sessionUsage(tenantId, [s.record.id])).size, 0);
    });

    it('keeps a budget per user and a default per tenant, replaced by a put and removed by a delete', async () => {
      const tenantId = await tenant();
      assert.equal(await ctx.store.getBudget(tenantId, null), null);
      const fields = { period: 'day', max_cost_micro_usd: 5_000_000, max_tokens: null } as const;
      const stored = await ctx.store.putBudget(tenantId, null, fields);
      assert.deepEqual(
        { ...stored, created_at: '', updated_at: '' },
        { user_id: null, ...fields, created_at: '', updated_at: '' },
      );
      const replaced = await ctx.store.putBudget(tenantId, 'usr_1', {
        period: 'month',
        max_cost_micro_usd: null,
        max_tokens: 9_000_000_000,
      });
      assert.equal(replaced.user_id, 'usr_1');
      assert.deepEqual(await ctx.store.getBudget(tenantId, 'usr_1'), replaced);
      assert.deepEqual(await ctx.store.getBudget(tenantId, null), stored);
      assert.equal(await ctx.store.getBudget(await tenant(), null), null, 'another tenant has none');
      assert.equal(await ctx.store.deleteBudget(tenantId, null), true);
      assert.equal(await ctx.store.deleteBudget(tenantId, null), false);
      assert.deepEqual(await ctx.store.getBudget(tenantId, 'usr_1'), replaced);
    });
  });
}
