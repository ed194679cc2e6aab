// Store contract: tool calls that wait for a person's decision (docs/internals/decisions.md#approvals). A call
// committed with an approval is stored `awaiting_approval` with its approver and expiry and is listed by
// awaitingApproval; a decision is applied only to a call still waiting (two decisions on one call: exactly one
// is applied, the other's whole write is undone); a session's wake_at is set, kept and cleared by its writes
// and found by sessionsToWake.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { ApprovalConflictError, type NewToolCall } from '../../../src/store/store.ts';
import type { SessionFixture } from './support.ts';
import { storedCall } from './tool-calls.ts';

export function approvals(f: SessionFixture): void {
  const { ctx, tenant, claim, createSession, createSessions, message, isStale, after } = f;

  const call = (turnId: string, position: number, fields: Partial<NewToolCall> = {}): NewToolCall => ({
    id: newId('call'),
    turn_id: turnId,
    step: 1,
    position,
    name: `tool_${position}`,
    input: { position },
    step_text: position === 0 ? 'Shall I?' : null,
    step_usage: null,
    ...fields,
  });

  const isConflict = (callId: string) => (err: unknown) =>
    err instanceof ApprovalConflictError && err.callId === callId;

  describe('approvals', () => {
    it('a call committed with an approval waits, with its approver and expiry, and awaitingApproval lists it', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const other = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const expires = after(start, 86_400_000);
      const calls = [
        call(turn, 0),
        call(turn, 1, { approval: { approver: 'user', expires_at: expires } }),
        call(turn, 2, { approval: { approver: 'operator', expires_at: expires } }),
      ];
      const othersCall = call(newId('turn'), 0, { approval: { approver: 'user', expires_at: expires } });
      const at = after(start, 1_000);
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        patch: { snapshot: '{"paused":1}' },
        toolCalls: calls,
      });
      await ctx.store.commitSession({
        session_id: other.record.id,
        fence: other.fence,
        at,
        patch: { snapshot: '{"paused":1}' },
        toolCalls: [othersCall],
      });
      const stored = calls.map((c) => storedCall(c, at));
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), stored);
      assert.equal(stored[1]?.status, 'awaiting_approval');
      assert.equal(stored[2]?.approver, 'operator');
      const ofSession = (sessionId: string) => (c: ReturnType<typeof storedCall>) => ({
        ...c,
        session_id: sessionId,
      });
      assert.deepEqual(
        await ctx.store.awaitingApproval([record.id]),
        stored.slice(1).map(ofSession(record.id)),
      );
      const both = await ctx.store.awaitingApproval([record.id, other.record.id]);
      assert.deepEqual(
        both.toSorted((a, b) => a.session_id.localeCompare(b.session_id)),
        [
          ...stored.slice(1).map(ofSession(record.id)),
          ofSession(other.record.id)(storedCall(othersCall, at)),
        ].toSorted((a, b) => a.session_id.localeCompare(b.session_id)),
      );
      assert.deepEqual(await ctx.store.awaitingApproval([]), []);
      assert.deepEqual(await ctx.store.awaitingApproval([newId('ses')]), []);
    });

    it('an approval puts the call back to be run; a denial completes it with its error result, next in order', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const approval = { approver: 'user' as const, expires_at: after(start, 60_000) };
      const calls = [call(turn, 0), call(turn, 1, { approval }), call(turn, 2, { approval })];
      const [plain, approved, denied] = calls;
      assert.ok(plain && approved && denied);
      const at = after(start, 1_000);
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        patch: { snapshot: '{}' },
        toolCalls: calls,
      });
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 2_000),
        patch: { snapshot: '{}' },
        toolResults: [{ id: plain.id, turn_id: turn, status: 'ok', output: { done: 1 }, duration_ms: 3 }],
      });
      const denial = { error: 'denied', by: 'operator', reason: 'not today' };
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 3_000),
        patch: { snapshot: '{}' },
        decisions: [
          { id: approved.id, turn_id: turn, decision: 'approved', by: 'user', reason: null },
          {
            id: denied.id,
            turn_id: turn,
            decision: 'denied',
            by: 'operator',
            reason: 'not today',
            output: denial,
          },
        ],
      });
      const [first, second, third] = calls.map((c) => storedCall(c, at));
      assert.ok(first && second && third);
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        {
          ...first,
          status: 'ok',
          output: { done: 1 },
          duration_ms: 3,
          completed_at: after(start, 2_000),
          completed_seq: 1,
        },
        {
          ...second,
          status: null,
          decision: 'approved',
          decided_by: 'user',
          decided_at: after(start, 3_000),
        },
        {
          ...third,
          status: 'error',
          output: denial,
          duration_ms: 0,
          completed_at: after(start, 3_000),
          completed_seq: 2,
          decision: 'denied',
          decided_by: 'operator',
          decision_reason: 'not today',
          decided_at: after(start, 3_000),
        },
      ]);
      assert.deepEqual(await ctx.store.awaitingApproval([record.id]), []);

      // The approved call runs, and its result is committed as any call's.
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 4_000),
        patch: { snapshot: '{}' },
        toolResults: [{ id: approved.id, turn_id: turn, status: 'ok', output: 'ran', duration_ms: 9 }],
      });
      const [, ran] = await ctx.store.turnToolCalls(record.id, turn);
      assert.deepEqual(
        [ran?.status, ran?.output, ran?.completed_seq, ran?.decision],
        ['ok', 'ran', 3, 'approved'],
      );
    });

    it('a decision on a call that is not waiting undoes its whole write, whatever else the write held', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const approval = { approver: 'operator' as const, expires_at: after(start, 60_000) };
      const calls = [call(turn, 0), call(turn, 1, { approval }), call(turn, 2, { approval })];
      const [plain, decided, waiting] = calls;
      assert.ok(plain && decided && waiting);
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 1_000),
        patch: { snapshot: '{"v":1}' },
        toolCalls: calls,
      });
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 2_000),
        patch: { snapshot: '{"v":2}' },
        decisions: [{ id: decided.id, turn_id: turn, decision: 'approved', by: 'operator', reason: null }],
      });
      const before = await ctx.store.turnToolCalls(record.id, turn);
      const sessionBefore = await ctx.store.loadSession(record.id);
      const attempts = [
        // Decided already, never asked, unknown, and of another turn.
        { id: decided.id, turn_id: turn },
        { id: plain.id, turn_id: turn },
        { id: newId('call'), turn_id: turn },
        { id: waiting.id, turn_id: newId('turn') },
      ];
      for (const target of attempts) {
        await assert.rejects(
          ctx.store.commitSession({
            session_id: record.id,
            fence,
            at: after(start, 3_000),
            messages: [message(turn, 'assistant', 'should not be stored')],
            patch: { snapshot: '{"v":"undone"}', wake_at: after(start, 3_000) },
            decisions: [
              // A valid decision first: undone with the rest.
              { id: waiting.id, turn_id: turn, decision: 'denied', by: 'operator', reason: null, output: {} },
              { ...target, decision: 'denied', by: 'operator', reason: null, output: {} },
            ],
          }),
          isConflict(target.id),
        );
      }
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), before);
      assert.deepEqual(await ctx.store.loadSession(record.id), sessionBefore);
      assert.deepEqual(await ctx.store.turnMessages(record.id, turn), []);
    });

    it('of two writes deciding one call at once, exactly one is applied', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const contested = call(turn, 0, { approval: { approver: 'user', expires_at: after(start, 60_000) } });
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 1_000),
        patch: { snapshot: '{}' },
        toolCalls: [contested],
      });
      const outcomes = await Promise.allSettled(
        (['approved', 'denied'] as const).map((decision) =>
          ctx.store.commitSession({
            session_id: record.id,
            fence,
            patch: { snapshot: `{"by":"${decision}"}` },
            decisions: [{ id: contested.id, turn_id: turn, decision, by: 'user', reason: null, output: {} }],
          }),
        ),
      );
      const applied = outcomes.filter((o) => o.status === 'fulfilled');
      const refused = outcomes.filter((o) => o.status === 'rejected');
      assert.equal(applied.length, 1, JSON.stringify(outcomes));
      assert.ok(refused[0] && isConflict(contested.id)(refused[0].reason));
      const [stored] = await ctx.store.turnToolCalls(record.id, turn);
      const winner = outcomes[0]?.status === 'fulfilled' ? 'approved' : 'denied';
      assert.equal(stored?.decision, winner);
      assert.equal((await ctx.store.loadSession(record.id))?.snapshot, `{"by":"${winner}"}`);
    });

    it('a stale fence refuses decisions, writing nothing', async () => {
      const tenantId = await tenant();
      const { record, fence: stale } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const waiting = call(turn, 0, { approval: { approver: 'user', expires_at: after(start, 60_000) } });
      await ctx.store.commitSession({
        session_id: record.id,
        fence: stale,
        at: after(start, 1_000),
        patch: { snapshot: '{}' },
        toolCalls: [waiting],
      });
      await claim(record.shard);
      await assert.rejects(
        ctx.store.commitSession({
          session_id: record.id,
          fence: stale,
          patch: { snapshot: '{"stale":true}' },
          decisions: [{ id: waiting.id, turn_id: turn, decision: 'approved', by: 'user', reason: null }],
        }),
        isStale(record.shard),
      );
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        storedCall(waiting, after(start, 1_000)),
      ]);
    });

    it('wake_at is set and cleared by the writes that name it, kept by the others, and sessionsToWake finds it', async () => {
      // Times in 1996, against a `now` of that time: unaffected by what other tests store for today.
      const now = Date.parse('1996-05-01T12:00:00.000Z');
      const iso = (ms: number) => new Date(now + ms).toISOString();
      const tenantId = await tenant();
      const created = await createSessions(tenantId, [{}, {}, {}, {}]);
      const [later, earliest, closed, cleared] = created;
      assert.ok(later && earliest && closed && cleared);
      const wake = async (id: string, shard: number, patch: object) =>
        ctx.store.commitSession({
          session_id: id,
          fence: await claim(shard),
          patch: { snapshot: '{}', ...patch },
        });
      await wake(later.id, later.shard, { wake_at: iso(-1_000) });
      await wake(earliest.id, earliest.shard, { wake_at: iso(-60_000) });
      await wake(closed.id, closed.shard, { wake_at: iso(-30_000) });
      await wake(closed.id, closed.shard, { status: 'closed', closed_at: iso(0) });
      await wake(cleared.id, cleared.shard, { wake_at: iso(-50_000) });
      // A write that leaves wake_at out keeps it; null clears it.
      await wake(later.id, later.shard, { last_message_at: iso(0) });
      await wake(cleared.id, cleared.shard, { wake_at: null });
      const ours = new Set(created.map((s) => s.id));
      const due = async (at: number, shards?: number[]) =>
        (await ctx.store.sessionsToWake(iso(at), 1000, shards)).filter((id) => ours.has(id));
      assert.deepEqual(await due(0), [earliest.id, later.id]);
      assert.deepEqual(await due(-2_000), [earliest.id]);
      assert.equal((await ctx.store.sessionsToWake(iso(0), 1)).length, 1, 'the limit is kept');
      assert.deepEqual(
        await due(0, [earliest.shard]),
        [earliest, later].filter((s) => s.shard === earliest.shard).map((s) => s.id),
      );
      assert.deepEqual(await ctx.store.sessionsToWake(iso(0), 1000, []), []);
      // Nothing left due for later runs on a shared database.
      await wake(later.id, later.shard, { wake_at: null });
      await wake(earliest.id, earliest.shard, { wake_at: null });
      assert.deepEqual(await due(0), []);
    });
  });
}
