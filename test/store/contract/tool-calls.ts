// Store contract: a turn's tool calls (docs/internals/decisions.md#the-durable-step-loop), committed fenced
// before they run and completed with their results, and the tool_calls an assistant message keeps.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import {
  fullUsage,
  type NewToolCall,
  type ToolCallRecord,
  type ToolCallSummary,
} from '../../../src/store/store.ts';
import type { SessionFixture } from './support.ts';

/** A call as stored once committed at `at`: no result, and (without `approval`) no approval either. */
export function storedCall({ approval, ...c }: NewToolCall, at: string): ToolCallRecord {
  return {
    ...c,
    step_usage: c.step_usage ? fullUsage(c.step_usage) : null,
    status: approval ? 'awaiting_approval' : null,
    output: null,
    duration_ms: null,
    created_at: at,
    completed_at: null,
    completed_seq: null,
    approver: approval?.approver ?? null,
    expires_at: approval?.expires_at ?? null,
    decision: null,
    decided_by: null,
    decision_reason: null,
    decided_at: null,
  };
}

export function toolCalls(f: SessionFixture): void {
  const { ctx, tenant, claim, createSession, message, stored, isStale, all, after } = f;

  /** A step's call as the step loop would commit it. */
  function call(
    turnId: string,
    step: number,
    position: number,
    fields: Partial<NewToolCall> = {},
  ): NewToolCall {
    return {
      id: newId('call'),
      turn_id: turnId,
      step,
      position,
      name: `tool_${step}_${position}`,
      input: { step, position, nested: { list: [1, 'two', null], flag: true } },
      step_text: null,
      step_usage: null,
      ...fields,
    };
  }

  /** The stored form of calls committed at `at`, not completed yet. */
  const pending = (calls: NewToolCall[], at: string): ToolCallRecord[] => calls.map((c) => storedCall(c, at));

  describe('tool calls', () => {
    it('a commit with toolCalls stores them, and turnToolCalls returns them by step and position, not completed', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const step1 = [
        call(turn, 1, 0, {
          step_text: 'Let me look that up.',
          step_usage: { input_tokens: 321, output_tokens: 45 },
        }),
        call(turn, 1, 1),
      ];
      const step2 = [
        call(turn, 2, 0, { step_usage: { input_tokens: 400, output_tokens: 12 }, input: 'plain' }),
      ];
      const at1 = after(start, 1_000);
      const at2 = after(start, 2_000);
      // Committed out of order within the write: the read orders by step and position, not by insertion.
      const result = await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: at1,
        patch: { snapshot: '{"step":1}' },
        toolCalls: step1.toReversed(),
      });
      assert.deepEqual(result, {
        messages: [],
        messages_count: 0,
        updated_at: at1,
        webhook_deliveries: 0,
        webhook_refused: 0,
        events_count: 0,
      });
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), pending(step1, at1));

      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: at2,
        patch: { snapshot: '{"step":2}' },
        toolCalls: step2,
      });
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        ...pending(step1, at1),
        ...pending(step2, at2),
      ]);

      // Another turn, and the same turn id in another session, see none of them.
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, newId('turn')), []);
      const other = await createSession(tenantId);
      assert.deepEqual(await ctx.store.turnToolCalls(other.record.id, turn), []);
      // Tool calls are not messages.
      const session = await ctx.store.getSession(tenantId, record.id);
      assert.equal(session?.messages_count, 0);
      assert.deepEqual(await ctx.store.turnMessages(record.id, turn), []);
    });

    it('a later commit with toolResults completes the calls it names with status, output and duration_ms', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const calls = [
        call(turn, 1, 0, { step_text: 'Checking both.', step_usage: { input_tokens: 10, output_tokens: 5 } }),
        call(turn, 1, 1),
        call(turn, 1, 2),
      ];
      const at = after(start, 1_000);
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        patch: { snapshot: '{"acting":3}' },
        toolCalls: calls,
      });
      const [first, second, third] = pending(calls, at);
      assert.ok(first && second && third);

      // Results arrive one commit each, in the order the tools answered.
      const okOutput = { order: { id: 'o_1', status: 'shipped' }, items: [1, 2] };
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 2_000),
        patch: { snapshot: '{"acting":2}' },
        toolResults: [{ id: second.id, turn_id: turn, status: 'ok', output: okOutput, duration_ms: 42 }],
      });
      const secondDone = {
        status: 'ok',
        output: okOutput,
        duration_ms: 42,
        completed_at: after(start, 2_000),
        completed_seq: 1,
      };
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        first,
        { ...second, ...secondDone },
        third,
      ]);

      const errorOutput = { error: 'timeout', message: 'The tool did not answer within 15000 ms' };
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 3_000),
        patch: { snapshot: '{"acting":0}' },
        toolResults: [
          { id: first.id, turn_id: turn, status: 'error', output: errorOutput, duration_ms: 15_000 },
          { id: third.id, turn_id: turn, status: 'ok', output: 'a plain string', duration_ms: 0 },
        ],
      });
      const laterAt = after(start, 3_000);
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        // Two results of one commit: in the order the commit lists them.
        {
          ...first,
          status: 'error',
          output: errorOutput,
          duration_ms: 15_000,
          completed_at: laterAt,
          completed_seq: 2,
        },
        { ...second, ...secondDone },
        {
          ...third,
          status: 'ok',
          output: 'a plain string',
          duration_ms: 0,
          completed_at: laterAt,
          completed_seq: 3,
        },
      ]);
    });

    it('a result is written once: a later commit with toolResults for a completed call keeps the first result', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const calls = [call(turn, 1, 0), call(turn, 1, 1)];
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 1_000),
        patch: { snapshot: '{"acting":2}' },
        toolCalls: calls,
      });
      const [done, open] = pending(calls, after(start, 1_000));
      assert.ok(done && open);
      const firstOutput = { recorded: 'first' };
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 2_000),
        patch: { snapshot: '{"acting":1}' },
        toolResults: [{ id: done.id, turn_id: turn, status: 'ok', output: firstOutput, duration_ms: 12 }],
      });
      const completed = {
        ...done,
        status: 'ok' as const,
        output: firstOutput,
        duration_ms: 12,
        completed_at: after(start, 2_000),
        completed_seq: 1,
      };
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [completed, open]);

      // The same process again (a late duplicate), then a new owner that made the call once more: the
      // write succeeds, and completes what had no result, but the stored result stays the first.
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at: after(start, 3_000),
        patch: { snapshot: '{"acting":1,"again":true}' },
        toolResults: [
          { id: done.id, turn_id: turn, status: 'error', output: { error: 'late' }, duration_ms: 99 },
        ],
      });
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [completed, open]);
      const current = await claim(record.shard);
      const openOutput = 'the other one';
      await ctx.store.commitSession({
        session_id: record.id,
        fence: current,
        at: after(start, 4_000),
        patch: { snapshot: '{"acting":0}' },
        toolResults: [
          { id: done.id, turn_id: turn, status: 'ok', output: { recorded: 'second' }, duration_ms: 30 },
          { id: open.id, turn_id: turn, status: 'ok', output: openOutput, duration_ms: 5 },
        ],
      });
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        completed,
        {
          ...open,
          status: 'ok',
          output: openOutput,
          duration_ms: 5,
          completed_at: after(start, 4_000),
          completed_seq: 2,
        },
      ]);
      assert.equal((await ctx.store.loadSession(record.id))?.snapshot, '{"acting":0}');
    });

    it('a stale fence refuses tool calls and tool results alike, writing nothing', async () => {
      const tenantId = await tenant();
      const { record, fence: stale } = await createSession(tenantId);
      const turn = newId('turn');
      const start = Date.now();
      const committed = call(turn, 1, 0, {
        step_text: 'One moment.',
        step_usage: { input_tokens: 1, output_tokens: 1 },
      });
      await ctx.store.commitSession({
        session_id: record.id,
        fence: stale,
        at: after(start, 1_000),
        patch: { snapshot: '{"v":"before"}' },
        toolCalls: [committed],
      });
      const callsBefore = await ctx.store.turnToolCalls(record.id, turn);
      const sessionBefore = await ctx.store.loadSession(record.id);
      assert.deepEqual(callsBefore, pending([committed], after(start, 1_000)));

      // Another process takes the shard over.
      const current = await claim(record.shard);
      const late = call(turn, 2, 0);
      await assert.rejects(
        () =>
          ctx.store.commitSession({
            session_id: record.id,
            fence: stale,
            at: after(start, 2_000),
            patch: { snapshot: '{"v":"stale calls"}' },
            toolCalls: [late],
          }),
        isStale(record.shard),
      );
      await assert.rejects(
        () =>
          ctx.store.commitSession({
            session_id: record.id,
            fence: stale,
            at: after(start, 2_000),
            patch: { snapshot: '{"v":"stale result"}' },
            toolResults: [
              { id: committed.id, turn_id: turn, status: 'ok', output: { lost: true }, duration_ms: 5 },
            ],
          }),
        isStale(record.shard),
      );
      // Both at once, as a step that commits a result and the next calls together would.
      await assert.rejects(
        () =>
          ctx.store.commitSession({
            session_id: record.id,
            fence: stale,
            at: after(start, 2_000),
            patch: { snapshot: '{"v":"stale both"}' },
            toolCalls: [late],
            toolResults: [
              { id: committed.id, turn_id: turn, status: 'ok', output: { lost: true }, duration_ms: 5 },
            ],
          }),
        isStale(record.shard),
      );
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), callsBefore);
      assert.deepEqual(await ctx.store.loadSession(record.id), sessionBefore);

      // The new owner completes the call, and may commit the next step's call.
      await ctx.store.commitSession({
        session_id: record.id,
        fence: current,
        at: after(start, 3_000),
        patch: { snapshot: '{"v":"after"}' },
        toolCalls: [late],
        toolResults: [
          { id: committed.id, turn_id: turn, status: 'ok', output: { found: 1 }, duration_ms: 7 },
        ],
      });
      assert.deepEqual(await ctx.store.turnToolCalls(record.id, turn), [
        ...pending([committed], after(start, 1_000)).map((c) => ({
          ...c,
          status: 'ok' as const,
          output: { found: 1 },
          duration_ms: 7,
          completed_at: after(start, 3_000),
          completed_seq: 1,
        })),
        ...pending([late], after(start, 3_000)),
      ]);
    });

    it('a message committed with tool_calls reads them back everywhere it is read, and one without reads null', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const turn = newId('turn');
      const summaries: ToolCallSummary[] = [
        {
          id: newId('call'),
          name: 'lookup_order',
          input: { order_id: 'o_1' },
          output: { status: 'shipped', eta: '2025-01-02' },
          status: 'ok',
          duration_ms: 38,
        },
        {
          id: newId('call'),
          name: 'crm__find_customer',
          input: { email: 'a@example.com' },
          output: { error: 'http_status', status: 503 },
          status: 'error',
          duration_ms: 1_204,
        },
      ];
      const question = message(turn, 'user', 'Where is my order?');
      const reply = {
        ...message(turn, 'assistant', 'It ships tomorrow.'),
        stop_reason: 'end' as const,
        usage: { input_tokens: 900, output_tokens: 20 },
        tool_calls: summaries,
      };
      // A reply that called no tool: explicit null, and absent, both read null.
      const plain = { ...message(turn, 'assistant', 'Anything else?'), tool_calls: null };
      const absent = message(turn, 'assistant', 'Bye.');
      const messages = [question, reply, plain, absent];
      const at = new Date().toISOString();
      const result = await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        messages,
        patch: { snapshot: '{"v":"replied"}' },
      });
      const expected = stored(record.id, at, messages);
      assert.deepEqual(
        expected.map((m) => m.tool_calls),
        [null, summaries, null, null],
      );
      assert.deepEqual(result.messages, expected);
      for (const m of expected) {
        assert.deepEqual(await ctx.store.getMessage(tenantId, record.id, m.id), m);
      }
      assert.deepEqual((await ctx.store.listMessages(tenantId, record.id, all))?.items, expected);
      assert.deepEqual(await ctx.store.turnMessages(record.id, turn), expected);
      assert.deepEqual(await ctx.store.recentMessages(record.id, 10, Number.MAX_SAFE_INTEGER), expected);
      assert.deepEqual(
        await ctx.store.recentMessages(record.id, 3, Number.MAX_SAFE_INTEGER),
        expected.slice(1),
      );
    });
  });
}
