// Approvals and cancel through @parley/client against a real listening app whose tools are a real HTTP receiver
// (docs/guides/approvals.md): a send that pauses answers `status: 'awaiting_approval'` with typed approvals,
// approve/deny/decide go on (plain, or streamed from the pause), cancelTurn/cancel stop a running or paused
// turn, and every refusal (approval_not_pending, approval_forbidden, approval_pending) is a ParleyError.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type AnyTurnEvent, ParleyConversation, ParleyError } from '#client';
import { useApp } from '../helpers/app.ts';
import { buildApprovalApp, call, callsOf } from '../helpers/approvals.ts';
import { forward, startProxy } from '../helpers/http-proxy.ts';
import type { ToolReceiver } from '../helpers/tool-receiver.ts';
import { baseUrl, collect, deltaText, keyClient, listen, mergeDeltas } from './helpers.ts';

let receiver: ToolReceiver | undefined;
const cleanups: (() => unknown)[] = [];
const t = useApp(async () => {
  const made = await buildApprovalApp({ after: (fn) => void cleanups.push(fn as () => unknown) }, 'sqlite');
  if ('skip' in made) throw new Error(made.skip);
  receiver = made.receiver;
  return made;
}, listen);
after(async () => {
  for (const fn of cleanups) await fn();
});

const calls = (sessionId: string, tool?: string) => {
  if (!receiver) throw new Error('the receiver starts with the app');
  return callsOf(receiver, sessionId, tool);
};

/** A long message: the slow agent echoes it a word every 25 ms, several seconds in all. */
const LONG_TEXT = `Tell me a long story: ${'about the sea and the ships that sail on it '.repeat(12)}`;

const names = (events: AnyTurnEvent[]) => mergeDeltas(events).map((e) => e.event);

async function openConversation(agentId: string): Promise<ParleyConversation> {
  const started = await keyClient(t).createConversation(agentId);
  return new ParleyConversation({
    baseUrl: baseUrl(t),
    conversationId: started.conversation.id,
    token: started.session_token,
  });
}

describe('approvals with an API key', () => {
  it("answers a send that pauses with status 'awaiting_approval' and its approvals, then approve() goes on with the reply", async () => {
    const api = keyClient(t);
    const session = await api.createSession('shop');
    const paused = await api.sendMessage(session.id, `Refund it ${call('refund', 'r1')}`);
    assert.ok(paused.status === 'awaiting_approval', JSON.stringify(paused));
    assert.equal(paused.agent_message, null);
    assert.equal(paused.turn.status, 'awaiting_approval');
    const [approval] = paused.turn.approvals;
    assert.ok(approval);
    assert.deepEqual(
      [approval.tool, approval.input, approval.approver],
      ['refund', { value: 'r1' }, 'operator'],
    );
    assert.deepEqual((await api.getSession(session.id)).pending_approvals, paused.turn.approvals);
    assert.deepEqual(calls(session.id), [], 'nothing runs before the decision');

    const refused = await api.sendMessage(session.id, 'anyone there?').catch((e: unknown) => e);
    assert.ok(refused instanceof ParleyError);
    assert.equal(refused.status, 409);
    assert.equal(refused.code, 'approval_pending');
    assert.deepEqual(refused.context, { turn_id: paused.turn.id, call_ids: [approval.call_id] });

    const replied = await api.approve(session.id, paused.turn.id, approval.call_id);
    assert.ok(replied.status === 'replied', JSON.stringify(replied));
    assert.match(JSON.stringify(replied.agent_message.content), /Tools: refund ok/);
    assert.deepEqual(
      calls(session.id).map((r) => r.body?.tool),
      ['refund'],
    );
    // The same decision again is answered with the same reply; another one for that call is refused.
    const again = await api.decide(session.id, paused.turn.id, [
      { call_id: approval.call_id, approved: true },
    ]);
    assert.ok(again.status === 'replied');
    assert.equal(again.agent_message.id, replied.agent_message.id);
    await assert.rejects(api.deny(session.id, paused.turn.id, approval.call_id), {
      name: 'ParleyError',
      status: 409,
      code: 'approval_not_pending',
    });
    assert.equal(calls(session.id).length, 1, 'the approved call ran once');
  });

  it('denies with a reason: the call never runs, and the model is told who denied it and why', async () => {
    const api = keyClient(t);
    const session = await api.createSession('shop');
    const paused = await api.sendMessage(session.id, call('refund', 'r2'));
    assert.ok(paused.status === 'awaiting_approval');
    const callId = paused.turn.approvals[0]?.call_id ?? '';
    const replied = await api.deny(session.id, paused.turn.id, [callId], 'over the limit');
    assert.ok(replied.status === 'replied');
    assert.deepEqual(
      replied.agent_message.tool_calls?.map((c) => [c.id, c.status, c.output]),
      [[callId, 'error', { error: 'denied', by: 'operator', reason: 'over the limit' }]],
    );
    assert.deepEqual(calls(session.id), []);
  });

  it('streams a turn to its pause, then streamDecision() streams the rest from there to turn.completed', async () => {
    const api = keyClient(t);
    const session = await api.createSession('shop');
    const stream = api.streamMessage(session.id, `Mail it ${call('email', 'e1')}`);
    const first = await collect(stream);
    assert.deepEqual(names(first), [
      'turn.started',
      'message.delta',
      'tool.approval_requested',
      'turn.awaiting_approval',
    ]);
    const requested = first.find((e) => e.event === 'tool.approval_requested');
    assert.ok(requested?.event === 'tool.approval_requested');
    assert.deepEqual(
      [requested.data.tool, requested.data.input, requested.data.approver],
      ['email', { value: 'e1' }, 'user'],
    );
    const paused = first.at(-1);
    assert.ok(paused?.event === 'turn.awaiting_approval');
    assert.deepEqual(
      paused.data.approvals.map((a) => a.call_id),
      [requested.data.call_id],
    );

    const turnId = stream.turnId ?? '';
    const rest = await collect(
      api.streamDecision(session.id, turnId, [{ call_id: requested.data.call_id, approved: true }]),
    );
    assert.equal(rest[0]?.event, 'tool.started', 'the continuation starts after the pause');
    assert.equal(rest.at(-1)?.event, 'turn.completed');
    assert.ok(rest.every((e) => e.id.startsWith(`${turnId}:`)));
    assert.match(deltaText(rest), /Tools: email ok/);
    assert.deepEqual(
      calls(session.id).map((r) => r.body?.tool),
      ['email'],
    );
  });

  it('resumes a decision stream cut mid-way after its last event, and sends the decision again when the first connection drops', async () => {
    let cut = 0;
    const proxy = await startProxy(baseUrl(t), (req) => {
      if (!req.url.endsWith('/approvals')) return forward;
      cut++;
      // The first decision's connection drops before any answer; the second's is cut after 3 events.
      return cut === 1 ? { kind: 'drop' } : cut === 2 ? { kind: 'cut-after-events', events: 3 } : forward;
    });
    try {
      const api = keyClient(t, { baseUrl: proxy.url });
      const session = await api.createSession('shop-slow');
      const first = api.streamMessage(session.id, `${LONG_TEXT} ${call('email', 'e4')}`);
      const paused = (await collect(first)).at(-1);
      assert.ok(paused?.event === 'turn.awaiting_approval');
      const turnId = first.turnId ?? '';
      const decisions = [{ call_id: paused.data.approvals[0]?.call_id ?? '', approved: true }];
      const rest = await collect(api.streamDecision(session.id, turnId, decisions));
      assert.equal(rest.at(-1)?.event, 'turn.completed');
      const approvals = proxy.requests.filter((r) => r.url.endsWith('/approvals'));
      assert.equal(approvals.length, 2, 'sent again once, after the drop');
      const resumes = proxy.requests.filter((r) => r.url.includes(`/turns/${turnId}/events`));
      assert.equal(resumes[0]?.headers['last-event-id'], rest[2]?.id);
      const undisturbed = await collect(keyClient(t).resumeTurn(session.id, turnId, { after: paused.id }));
      assert.deepEqual(mergeDeltas(rest), mergeDeltas(undisturbed));
      assert.equal(calls(session.id).length, 1, 'the approved call ran once');
    } finally {
      await proxy.close();
    }
  });

  it('cancelTurn() stops a running turn: its stream ends with turn.cancelled after the text written so far', async () => {
    const api = keyClient(t);
    const session = await api.createSession('shop-slow');
    const seen: AnyTurnEvent[] = [];
    let cancelled: Awaited<ReturnType<typeof api.cancelTurn>> | undefined;
    for await (const event of api.streamMessage(session.id, LONG_TEXT)) {
      seen.push(event);
      if (event.event === 'message.delta' && !cancelled)
        cancelled = await api.cancelTurn(session.id, event.data.turn_id);
    }
    assert.ok(cancelled);
    assert.equal(cancelled.turn.status, 'cancelled');
    assert.equal(cancelled.agent_message?.stop_reason, 'cancelled');
    assert.deepEqual(names(seen).slice(-2), ['message.completed', 'turn.cancelled']);
    const completed = seen.at(-2);
    assert.ok(completed?.event === 'message.completed');
    assert.deepEqual(completed.data.message, cancelled.agent_message);
    assert.ok(deltaText(seen).length < LONG_TEXT.length, 'stopped before the end');
    // A second cancel answers the same; the session takes turns again.
    assert.deepEqual(await api.cancelTurn(session.id, cancelled.turn.id), cancelled);
    assert.equal((await api.sendMessage(session.id, 'short')).status, 'replied');
  });
});

describe('approvals with a session token', () => {
  it("shows the end user only its own calls, refuses it an operator's call with 403, and approve() goes on", async () => {
    const conv = await openConversation('shop');
    const paused = await conv.send(`${call('refund', 'r')} ${call('email', 'e')}`);
    assert.ok(paused.status === 'awaiting_approval');
    assert.deepEqual(
      paused.turn.approvals.map((a) => [a.tool, a.approver]),
      [['email', 'user']],
    );
    assert.deepEqual((await conv.get()).pending_approvals, paused.turn.approvals);
    const all = (await keyClient(t).getSession(conv.conversationId)).pending_approvals;
    const operatorCall = all.find((a) => a.approver === 'operator')?.call_id ?? '';
    await assert.rejects(conv.approve(paused.turn.id, operatorCall), {
      name: 'ParleyError',
      status: 403,
      code: 'approval_forbidden',
    });
    const waiting = await conv.approve(paused.turn.id, paused.turn.approvals[0]?.call_id ?? '');
    // The operator's call still waits, and the end user is shown none of it.
    assert.ok(waiting.status === 'awaiting_approval');
    assert.deepEqual(waiting.turn.approvals, []);
    const replied = await keyClient(t).deny(conv.conversationId, paused.turn.id, operatorCall, 'not today');
    assert.ok(replied.status === 'replied');
    assert.deepEqual(
      calls(conv.conversationId).map((r) => r.body?.tool),
      ['email'],
    );
  });

  it('streams a denial: the continuation from the pause, and the call never runs', async () => {
    const conv = await openConversation('shop');
    const stream = conv.stream(call('email', 'e2'));
    const first = await collect(stream);
    const paused = first.at(-1);
    assert.ok(paused?.event === 'turn.awaiting_approval');
    const callId = paused.data.approvals[0]?.call_id ?? '';
    const rest = await collect(
      conv.streamDecision(stream.turnId ?? '', [{ call_id: callId, approved: false, reason: 'no mail' }]),
    );
    assert.deepEqual(names(rest), ['message.delta', 'message.completed', 'turn.completed']);
    assert.match(deltaText(rest), /Tools: email error/);
    assert.deepEqual(calls(conv.conversationId), []);
  });

  it('cancel() ends a paused turn: its waiting call is denied and never runs', async () => {
    const conv = await openConversation('shop');
    const paused = await conv.send(call('email', 'e3'));
    assert.ok(paused.status === 'awaiting_approval');
    const result = await conv.cancel(paused.turn.id);
    assert.deepEqual(result.turn, { id: paused.turn.id, status: 'cancelled', approvals: [] });
    assert.equal(result.agent_message?.stop_reason, 'cancelled');
    assert.equal('metadata' in (result.agent_message ?? {}), false, 'the end user never sees metadata');
    assert.deepEqual((await conv.get()).pending_approvals, []);
    await assert.rejects(conv.approve(paused.turn.id, paused.turn.approvals[0]?.call_id ?? ''), {
      name: 'ParleyError',
      status: 409,
      code: 'approval_not_pending',
    });
    assert.deepEqual(calls(conv.conversationId), []);
  });
});
