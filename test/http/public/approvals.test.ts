// Approvals through the public family (docs/guides/approvals.md), on SQLite and PostgreSQL: the end user is
// shown only the calls whose approver is `user` (in the 202, the Conversation record, approval_pending and the
// events), decides those with its session token, is refused an `operator` call with 403, and cancels a turn.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  approvalOf,
  call,
  callsOf,
  pausedTurn,
  perStore,
  postgresMissing,
  turnsOf,
} from '../../helpers/approvals.ts';
import { openConversation } from '../../helpers/conversations.ts';
import { assertError, textOf } from '../../helpers/sessions.ts';
import { parseSse } from '../../helpers/sse.ts';

const pgMissing = await postgresMissing();

/** The events' names, deltas in a row told as one (how the text was cut depends on the reader). */
const namesOf = (events: { event: string }[]) =>
  events.map((e) => e.event).filter((name, i, all) => name !== 'message.delta' || all[i - 1] !== name);

perStore('approvals in the public family', pgMissing, (t) => {
  it("shows the end user only its own calls: the 202, the conversation's pending_approvals, approval_pending", async () => {
    const c = await openConversation(t, 'shop');
    const turn = pausedTurn(
      await c.pub.post('/messages', { content: `${call('refund', 'r')} ${call('email', 'e')}` }),
    );
    assert.deepEqual(
      turn.approvals.map((a) => [a.tool, a.approver]),
      [['email', 'user']],
    );
    assert.deepEqual((await c.pub.get()).json().pending_approvals, turn.approvals);
    const error = assertError(await c.pub.post('/messages', { content: 'hello?' }), 409, 'approval_pending');
    assert.deepEqual(error.context, { turn_id: turn.id, call_ids: [turn.approvals[0]?.call_id] });
    assertError(await c.pub.post('/inactivity', { step: 'warning' }), 409, 'approval_pending');
    // The integrator sees both.
    const session = (await turnsOf(t, c.id).session()).json();
    assert.deepEqual(
      session.pending_approvals.map((a: { tool: string }) => a.tool),
      ['refund', 'email'],
    );
  });

  it('decides a user call with the token, and is refused an operator call with 403 approval_forbidden', async () => {
    const c = await openConversation(t, 'shop');
    const turn = pausedTurn(
      await c.pub.post('/messages', { content: `${call('refund', 'r')} ${call('email', 'e')}` }),
    );
    const all = (await t.store.turnToolCalls(c.id, turn.id)).filter((x) => x.approver);
    const operatorCall = all.find((x) => x.approver === 'operator')?.id ?? '';
    const userCall = approvalOf(turn, 'email').call_id;
    const forbidden = assertError(
      await c.pub.post(`/turns/${turn.id}/approvals`, {
        decisions: [
          { call_id: userCall, approved: true },
          { call_id: operatorCall, approved: true },
        ],
      }),
      403,
      'approval_forbidden',
    );
    assert.deepEqual(forbidden.context, { turn_id: turn.id, call_id: operatorCall });
    // Nothing applied: the user's call still waits.
    assert.deepEqual((await c.pub.get()).json().pending_approvals, turn.approvals);
    const partial = pausedTurn(
      await c.pub.post(`/turns/${turn.id}/approvals`, { decisions: [{ call_id: userCall, approved: true }] }),
    );
    // The operator's call still waits, and the end user is shown none.
    assert.deepEqual(partial.approvals, []);
    const done = await turnsOf(t, c.id).decide(turn.id, [{ call_id: operatorCall, approved: false }]);
    assert.equal(done.statusCode, 201, done.body);
    assert.deepEqual(
      callsOf(t.receiver, c.id).map((r) => r.body?.tool),
      ['email'],
    );
    // A user call may be decided by the integrator too; a decision by the user is `by: user`.
    const c2 = await openConversation(t, 'shop');
    const turn2 = pausedTurn(await c2.pub.post('/messages', { content: call('email', 'x') }));
    const denied = await c2.pub.post(`/turns/${turn2.id}/approvals`, {
      decisions: [{ call_id: turn2.approvals[0]?.call_id, approved: false, reason: 'not now' }],
    });
    assert.equal(denied.statusCode, 201, denied.body);
    assert.equal(
      denied.json().agent_message.tool_calls,
      undefined,
      'no tool calls shown without expose_tools',
    );
    assert.match(
      textOf(denied.json().agent_message),
      /email error \{"error":"denied","by":"user","reason":"not now"\}/,
    );
  });

  it('streams a paused turn to the end user with its own approval requests only, and no tool events', async () => {
    const c = await openConversation(t, 'shop');
    const res = await c.pub.post('/messages/stream', {
      content: `${call('refund', 'r')} ${call('email', 'e')} ${call('lookup', 'l')}`,
    });
    assert.equal(res.statusCode, 200, res.body);
    const { events } = parseSse(res.body);
    assert.deepEqual(namesOf(events), [
      'turn.started',
      'message.delta',
      'tool.approval_requested',
      'turn.awaiting_approval',
    ]);
    const requested = events.at(-2)?.data as unknown as { tool: string; approver: string };
    assert.deepEqual([requested.tool, requested.approver], ['email', 'user']);
    const awaiting = events.at(-1)?.data as unknown as { approvals: { tool: string }[] };
    assert.deepEqual(
      awaiting.approvals.map((a) => a.tool),
      ['email'],
    );
  });

  it('shows tool events too where the agent exposes its tools, but never the operator’s approvals', async () => {
    const c = await openConversation(t, 'shop-open');
    const res = await c.pub.post('/messages/stream', {
      content: `${call('refund', 'r')} ${call('lookup', 'l')}`,
    });
    const names = namesOf(parseSse(res.body).events);
    assert.deepEqual(names, [
      'turn.started',
      'message.delta',
      'tool.started',
      'tool.completed',
      'turn.awaiting_approval',
    ]);
  });

  it('streams a decision made with the token: the turn going on, without tool events', async () => {
    const c = await openConversation(t, 'shop');
    const turn = pausedTurn(await c.pub.post('/messages', { content: call('email', 'streamed') }));
    const res = await c.pub.post(
      `/turns/${turn.id}/approvals`,
      { decisions: [{ call_id: turn.approvals[0]?.call_id, approved: true }] },
      { accept: 'text/event-stream' },
    );
    assert.equal(res.statusCode, 200, res.body);
    const events = parseSse(res.body).events;
    assert.deepEqual(namesOf(events), ['message.delta', 'message.completed', 'turn.completed']);
    const message = events.at(-2)?.data.message as unknown as Record<string, unknown>;
    assert.equal('metadata' in message, false);
    assert.equal(callsOf(t.receiver, c.id, 'email').length, 1);
  });

  it('cancels a paused turn with the token: 200 cancelled, its waiting calls denied, nothing sent', async () => {
    const c = await openConversation(t, 'shop');
    const turn = pausedTurn(await c.pub.post('/messages', { content: call('email', 'stop') }));
    const res = await c.pub.post(`/turns/${turn.id}/cancel`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(body.turn, { id: turn.id, status: 'cancelled', approvals: [] });
    assert.equal(body.agent_message.stop_reason, 'cancelled');
    assert.equal(body.agent_message.metadata, undefined);
    assert.deepEqual((await c.pub.get()).json().pending_approvals, []);
    assert.equal((await c.pub.post(`/turns/${turn.id}/cancel`)).json().turn.status, 'cancelled');
    assert.deepEqual(callsOf(t.receiver, c.id), []);
    assertError(await c.pub.post('/turns/turn_unknown/cancel'), 404, 'turn_not_found');
  });
});
