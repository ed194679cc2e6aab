// How a paused turn ends besides decisions (docs/guides/approvals.md), on SQLite and PostgreSQL: a call nobody
// decides in time is denied (reason expired) on the next use of the session or by the sweep, and the turn
// goes on; terminate and the session's expiry end the turn; a run whose turn waits answers 202;
// turn.awaiting_approval is reported to webhooks.
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
import { assertError, client, createSession, textOf } from '../../helpers/sessions.ts';
import { waitFor } from '../../helpers/wait.ts';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.ts';

const pgMissing = await postgresMissing();

perStore('a paused turn, ended otherwise', pgMissing, (t) => {
  it('denies a call nobody decided in time (reason expired), on the next use of the session, and goes on', async () => {
    const s = await createSession(t, 'shop-quick');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'late')));
    const { call_id, expires_at } = approvalOf(turn, 'refund');
    await waitFor('the approval expired', () => Date.now() > Date.parse(expires_at));
    const error = assertError(
      await turns.decide(turn.id, [{ call_id, approved: true }]),
      409,
      'approval_not_pending',
    );
    assert.equal(error.context?.state, 'expired');
    // The turn went on by itself with the denial.
    await waitFor('the paused turn replied', async () => (await turns.session()).json().messages_count === 2);
    const messages = (await client(t).get(`/v1/agents/sessions/${s.id}/messages`)).json().items;
    assert.deepEqual(messages.at(-1).tool_calls[0].output, {
      error: 'denied',
      by: 'operator',
      reason: 'expired',
    });
    assert.deepEqual(callsOf(t.receiver, s.id), []);
    assert.equal((await turns.send('next')).statusCode, 201);
  });

  it('lets a send through once the waiting call expired: the paused turn goes on first, then the send', async () => {
    const s = await createSession(t, 'shop-quick');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('email', 'late')));
    await waitFor(
      'the approval expired',
      () => Date.now() > Date.parse(approvalOf(turn, 'email').expires_at),
    );
    const res = await turns.send('hello again');
    assert.equal(res.statusCode, 201, res.body);
    const messages = (await client(t).get(`/v1/agents/sessions/${s.id}/messages`)).json().items;
    assert.deepEqual(
      messages.map((m: { role: string }) => m.role),
      ['user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(messages[1].tool_calls[0].output.reason, 'expired');
  });

  it('is ended by terminate: its waiting call denied, the text so far its reply (stop_reason cancelled)', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'closing')));
    const res = await client(t).post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'done' });
    assert.equal(res.statusCode, 200, res.body);
    const messages = (await client(t).get(`/v1/agents/sessions/${s.id}/messages`)).json().items;
    const reply = messages.at(-1);
    assert.equal(reply.stop_reason, 'cancelled');
    assert.equal(textOf(reply), 'Let me use refund.');
    assert.deepEqual(reply.tool_calls[0].output, { error: 'denied', by: 'operator', reason: 'closed' });
    const session = (await turns.session()).json();
    assert.deepEqual([session.status, session.pending_approvals], ['closed', []]);
    assertError(
      await turns.decide(turn.id, [{ call_id: turn.approvals[0]?.call_id, approved: true }]),
      409,
      'session_closed',
    );
    // The closed session's turn is answered as it is stored.
    const cancelled = await turns.cancel(turn.id);
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.deepEqual(cancelled.json().turn, { id: turn.id, status: 'cancelled', approvals: [] });
    assert.deepEqual(callsOf(t.receiver, s.id), []);
  });

  it("is ended by the session's expiry: its waiting call denied, the text so far its reply", async () => {
    const s = await createSession(t, 'shop-brief');
    const turns = turnsOf(t, s.id);
    pausedTurn(await turns.send(call('email', 'too late')));
    await waitFor('the session expired', async () => (await turns.session()).json().status === 'expired');
    const messages = (await client(t).get(`/v1/agents/sessions/${s.id}/messages`)).json().items;
    const reply = messages.at(-1);
    assert.equal(reply.stop_reason, 'cancelled');
    assert.deepEqual(reply.tool_calls[0].output, { error: 'denied', by: 'user', reason: 'closed' });
    assert.deepEqual((await turns.session()).json().pending_approvals, []);
    assert.deepEqual(callsOf(t.receiver, s.id), []);
  });

  it('no longer lists an expired call as pending, and reading the session moves its turn on', async () => {
    const s = await createSession(t, 'shop-quick');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('email', 'read')));
    await waitFor(
      'the approval expired',
      () => Date.now() > Date.parse(approvalOf(turn, 'email').expires_at),
    );
    assert.deepEqual((await turns.session()).json().pending_approvals, []);
    await waitFor('the turn went on', async () => (await turns.session()).json().messages_count === 2);
  });

  it('is moved on by the sweep once its call expired, though nobody uses the session', async () => {
    const s = await createSession(t, 'shop-quick');
    const turn = pausedTurn(await turnsOf(t, s.id).send(call('refund', 'swept')));
    // Read from the store only: nothing reaches the session's actor but the sweep.
    await waitFor('the sweep moved the turn on', async () =>
      (await t.store.turnMessages(s.id, turn.id)).some((m) => m.stop_reason !== null),
    );
    const [, reply] = await t.store.turnMessages(s.id, turn.id);
    assert.deepEqual(reply?.tool_calls?.[0]?.output, { error: 'denied', by: 'operator', reason: 'expired' });
    assert.deepEqual(callsOf(t.receiver, s.id), []);
  });

  it('reports turn.awaiting_approval to webhooks, with every waiting call', async (c) => {
    const receiver = await startWebhookReceiver();
    c.after(() => receiver.close());
    const hook = await client(t).post('/v1/agents/webhooks', {
      url: receiver.url,
      events: ['turn.awaiting_approval'],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    c.after(() => client(t).delete(`/v1/agents/webhooks/${hook.json().id}`));
    const s = await createSession(t, 'shop');
    const turn = pausedTurn(await turnsOf(t, s.id).send(`${call('refund', 'w')} ${call('email', 'w')}`));
    await waitFor('the delivery', () =>
      receiver.requests.some(
        (r) => r.body?.type === 'turn.awaiting_approval' && r.body.data.session_id === s.id,
      ),
    );
    const delivery = receiver.requests.find((r) => r.body?.data.session_id === s.id);
    assert.deepEqual(delivery?.body?.data, {
      session_id: s.id,
      agent_id: 'shop',
      user: null,
      turn_id: turn.id,
      approvals: turn.approvals,
    });
  });

  it('answers a run whose turn waits with 202, the session id and the calls', async () => {
    const res = await client(t).post('/v1/agents/shop/run', {
      messages: [{ content: call('refund', 'run') }],
    });
    assert.equal(res.statusCode, 202, res.body);
    const body = res.json();
    assert.match(body.session_id, /^ses_/);
    assert.equal(body.turn.approvals[0].tool, 'refund');
    const decided = await turnsOf(t, body.session_id).decide(body.turn.id, [
      { call_id: body.turn.approvals[0].call_id, approved: true },
    ]);
    assert.equal(decided.statusCode, 201, decided.body);
  });
});
