// Approvals over HTTP with an API key, plain answers (docs/guides/approvals.md), on SQLite and PostgreSQL: a
// turn whose tool calls must be approved pauses (202) without calling them, the session lists them and
// refuses new turns; decisions let it go on (an approved call runs once under its key, a denied one never);
// every refusal of a decision applies nothing; identical and racing decisions; a keyed retry of the paused
// send; a later step that pauses again. (Expiry, terminate, run and the webhook: approvals-ends.test.ts.)
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

const pgMissing = await postgresMissing();

perStore('a turn that waits for approvals', pgMissing, (t) => {
  it('pauses with 202, runs the calls that need no approval, and never sends the waiting one', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`Refund it ${call('refund', 'r1')} ${call('lookup', 'l1')}`));
    assert.equal(turn.approvals.length, 1);
    const approval = approvalOf(turn, 'refund');
    assert.deepEqual(
      { ...approval, requested_at: typeof approval.requested_at, expires_at: typeof approval.expires_at },
      {
        call_id: approval.call_id,
        turn_id: turn.id,
        tool: 'refund',
        input: { value: 'r1' },
        approver: 'operator',
        requested_at: 'string',
        expires_at: 'string',
      },
    );
    // A day from the request, the agent's default.
    assert.equal(Date.parse(approval.expires_at) - Date.parse(approval.requested_at), 86_400_000);
    assert.deepEqual(
      callsOf(t.receiver, s.id).map((r) => r.body?.tool),
      ['lookup'],
    );

    const session = (await turns.session()).json();
    assert.deepEqual(session.pending_approvals, turn.approvals);
    const listed = (await client(t).get('/v1/agents/sessions?limit=100')).json().items;
    assert.deepEqual(listed.find((x: { id: string }) => x.id === s.id).pending_approvals, turn.approvals);
    // The user's message is stored, and no reply yet.
    assert.equal(session.messages_count, 1);
  });

  it('refuses a new send with 409 approval_pending naming the turn and its calls, storing nothing', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`${call('refund', 'r1')} ${call('email', 'e1')}`));
    const error = assertError(await turns.send('anyone there?'), 409, 'approval_pending');
    assert.deepEqual(error.context, { turn_id: turn.id, call_ids: turn.approvals.map((a) => a.call_id) });
    assert.equal((await turns.session()).json().messages_count, 1);
  });

  it('goes on once approved: the call runs once under its Idempotency-Key, and the reply holds its result', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'r2')));
    const { call_id } = approvalOf(turn, 'refund');
    const res = await turns.decide(turn.id, [{ call_id, approved: true }]);
    assert.equal(res.statusCode, 201, res.body);
    const reply = res.json().agent_message;
    assert.match(textOf(reply), /Tools: refund ok \{"recorded":"r2"\}/);
    assert.deepEqual(
      reply.tool_calls.map((c: { id: string; status: string }) => [c.id, c.status]),
      [[call_id, 'ok']],
    );
    const calls = callsOf(t.receiver, s.id, 'refund');
    assert.deepEqual(
      calls.map((r) => r.key),
      [`${turn.id}:${call_id}`],
    );
    assert.deepEqual((await turns.session()).json().pending_approvals, []);
    // The session takes turns again.
    assert.equal((await turns.send('thanks')).statusCode, 201);
  });

  it('never calls a denied tool: the model is told who denied it and why, and answers', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'r3')));
    const { call_id } = approvalOf(turn, 'refund');
    const res = await turns.decide(turn.id, [{ call_id, approved: false, reason: 'over the limit' }]);
    assert.equal(res.statusCode, 201, res.body);
    const [denied] = res.json().agent_message.tool_calls;
    assert.deepEqual(
      [denied.status, denied.output],
      ['error', { error: 'denied', by: 'operator', reason: 'over the limit' }],
    );
    assert.match(textOf(res.json().agent_message), /refund error \{"error":"denied","by":"operator"/);
    assert.deepEqual(callsOf(t.receiver, s.id), []);
  });

  it('takes decisions in several requests: 202 with the calls still waiting, then the reply', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`${call('refund', 'r4')} ${call('email', 'e4')}`));
    const refund = approvalOf(turn, 'refund');
    const email = approvalOf(turn, 'email');
    const first = pausedTurn(await turns.decide(turn.id, [{ call_id: email.call_id, approved: true }]));
    assert.deepEqual(first, { id: turn.id, status: 'awaiting_approval', approvals: [refund] });
    // Nothing runs before the step is decided whole.
    assert.deepEqual(callsOf(t.receiver, s.id), []);
    assert.deepEqual((await turns.session()).json().pending_approvals, [refund]);
    const done = await turns.decide(turn.id, [{ call_id: refund.call_id, approved: false }]);
    assert.equal(done.statusCode, 201, done.body);
    assert.deepEqual(
      callsOf(t.receiver, s.id).map((r) => r.body?.tool),
      ['email'],
    );
  });

  it('answers the same decision again like the first, and a different one 409 approval_not_pending', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'r5')));
    const { call_id } = approvalOf(turn, 'refund');
    const first = await turns.decide(turn.id, [{ call_id, approved: true, reason: 'fine' }]);
    assert.equal(first.statusCode, 201, first.body);
    const again = await turns.decide(turn.id, [{ call_id, approved: true, reason: 'fine' }]);
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    const other = assertError(
      await turns.decide(turn.id, [{ call_id, approved: false }]),
      409,
      'approval_not_pending',
    );
    assert.deepEqual(other.context, { turn_id: turn.id, call_id, state: 'decided' });
    // Another reason is another decision too.
    assertError(await turns.decide(turn.id, [{ call_id, approved: true }]), 409, 'approval_not_pending');
    assert.equal(callsOf(t.receiver, s.id).length, 1);
  });

  it('applies nothing of a request one of whose decisions names a call that is not waiting', async () => {
    const s = await createSession(t, 'shop');
    const other = await createSession(t, 'shop');
    const stranger = await createSession(t, 'shop', {}, await t.createKey('t2'));
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`${call('refund', 'r6')} ${call('lookup', 'l6')}`));
    const otherTurn = pausedTurn(await turnsOf(t, other.id).send(call('refund', 'o6')));
    const strangerKey = await t.createKey('t2');
    const strangerTurn = pausedTurn(await turnsOf(t, stranger.id, strangerKey).send(call('refund', 's6')));
    const mine = approvalOf(turn, 'refund');
    const lookupId = (await t.store.turnToolCalls(s.id, turn.id)).find((c) => c.name === 'lookup')?.id;
    const attempts: [string, string, string][] = [
      ['call_unknown', turn.id, 'unknown'],
      [approvalOf(otherTurn, 'refund').call_id, turn.id, 'unknown'],
      [approvalOf(strangerTurn, 'refund').call_id, turn.id, 'unknown'],
      [lookupId ?? '', turn.id, 'not_asked'],
      [mine.call_id, 'turn_unknown', 'unknown'],
      [mine.call_id, otherTurn.id, 'unknown'],
    ];
    for (const [callId, turnId, state] of attempts) {
      const error = assertError(
        await turns.decide(
          turnId,
          [
            { call_id: mine.call_id, approved: true },
            { call_id: callId, approved: true },
          ].filter((_d, i) => i === 1 || turnId === turn.id),
        ),
        409,
        'approval_not_pending',
      );
      assert.equal(error.context?.state, state, JSON.stringify(error));
    }
    // Nothing was applied: the call still waits, and was never sent.
    assert.deepEqual((await turns.session()).json().pending_approvals, [mine]);
    assert.deepEqual(
      callsOf(t.receiver, s.id).map((r) => r.body?.tool),
      ['lookup'],
    );
    // Another tenant does not see the session at all.
    assertError(
      await turnsOf(t, s.id, strangerKey).decide(turn.id, [{ call_id: mine.call_id, approved: true }]),
      404,
      'session_not_found',
    );
    assert.equal((await turns.decide(turn.id, [{ call_id: mine.call_id, approved: true }])).statusCode, 201);
  });

  it('refuses malformed decisions with 422 at their field, applying nothing', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'r7')));
    const { call_id } = approvalOf(turn, 'refund');
    const post = (body: unknown) =>
      client(t).post(`/v1/agents/sessions/${s.id}/turns/${turn.id}/approvals`, body);
    const cases: [unknown, (string | number)[]][] = [
      [{ decisions: [] }, ['body', 'decisions']],
      [{}, ['body', 'decisions']],
      [{ decisions: [{ call_id }] }, ['body', 'decisions', 0, 'approved']],
      [{ decisions: [{ call_id, approved: 'yes' }] }, ['body', 'decisions', 0, 'approved']],
      [
        { decisions: [{ call_id, approved: true, reason: 'x'.repeat(501) }] },
        ['body', 'decisions', 0, 'reason'],
      ],
      [{ decisions: [{ call_id, approved: true, extra: 1 }] }, ['body', 'decisions', 0, 'extra']],
      [
        {
          decisions: [
            { call_id, approved: true },
            { call_id, approved: false },
          ],
        },
        ['body', 'decisions', 1, 'call_id'],
      ],
      [
        { decisions: Array.from({ length: 17 }, (_, i) => ({ call_id: `c${i}`, approved: true })) },
        ['body', 'decisions'],
      ],
    ];
    for (const [body, loc] of cases) {
      const res = await post(body);
      assert.equal(res.statusCode, 422, `${JSON.stringify(body).slice(0, 80)}: ${res.body}`);
      assert.deepEqual(res.json().detail[0].loc, loc, res.body);
    }
    assert.deepEqual((await turns.session()).json().pending_approvals, turn.approvals);
    assert.deepEqual(callsOf(t.receiver, s.id), []);
  });

  it('of racing decisions applies exactly one: the same ones both answer the reply, different ones one 409', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(call('refund', 'r8')));
    const { call_id } = approvalOf(turn, 'refund');
    const same = await Promise.all([1, 2, 3].map(() => turns.decide(turn.id, [{ call_id, approved: true }])));
    assert.deepEqual(
      same.map((r) => r.statusCode),
      [201, 201, 201],
    );
    assert.equal(new Set(same.map((r) => r.json().agent_message.id)).size, 1);
    assert.equal(callsOf(t.receiver, s.id).length, 1);

    const s2 = await createSession(t, 'shop');
    const turns2 = turnsOf(t, s2.id);
    const turn2 = pausedTurn(await turns2.send(call('refund', 'r9')));
    const second = approvalOf(turn2, 'refund').call_id;
    const raced = await Promise.all([
      turns2.decide(turn2.id, [{ call_id: second, approved: true }]),
      turns2.decide(turn2.id, [{ call_id: second, approved: false }]),
    ]);
    assert.deepEqual(raced.map((r) => r.statusCode).sort(), [201, 409]);
    const won = raced.find((r) => r.statusCode === 201)?.json().agent_message.tool_calls[0].status;
    assert.equal(callsOf(t.receiver, s2.id).length, won === 'ok' ? 1 : 0);
  });

  it('answers a keyed retry of the paused send with the calls still waiting, and once finished with its reply', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const key = { 'idempotency-key': 'k-paused' };
    const message = call('refund', 'r10');
    const turn = pausedTurn(await turns.send(message, key));
    const retried = await turns.send(message, key);
    assert.deepEqual(pausedTurn(retried), turn);
    assert.equal(retried.headers['idempotent-replayed'], undefined);
    assertError(await turns.send('another body', key), 409, 'idempotency_key_reused');
    const decided = await turns.decide(turn.id, [{ call_id: turn.approvals[0]?.call_id, approved: true }]);
    assert.equal(decided.statusCode, 201);
    const replay = await turns.send(message, key);
    assert.equal(replay.statusCode, 201, replay.body);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json().agent_message, decided.json().agent_message);
    assert.equal(callsOf(t.receiver, s.id).length, 1);
    assert.equal((await turns.session()).json().messages_count, 2);
  });

  it('pauses again when a later step waits: the decision answers 202 with the new calls', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`${call('refund', 'a')} ${call('email', 'b', 2)}`));
    const next = pausedTurn(
      await turns.decide(turn.id, [{ call_id: turn.approvals[0]?.call_id, approved: true }]),
    );
    assert.equal(next.id, turn.id);
    assert.deepEqual(
      next.approvals.map((a) => a.tool),
      ['email'],
    );
    const done = await turns.decide(turn.id, [{ call_id: next.approvals[0]?.call_id, approved: true }]);
    assert.equal(done.statusCode, 201, done.body);
    assert.deepEqual(
      done.json().agent_message.tool_calls.map((c: { name: string }) => c.name),
      ['refund', 'email'],
    );
  });
});
