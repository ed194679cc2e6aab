// The session machine's paused turn (docs/internals/decisions.md#approvals), on its own: a turn whose calls
// wait for decisions pauses when its operation ends, is stored paused and restored paused, refuses new turns
// until its calls are decided or expire, lets decisions, cancels and terminates run, queues the operation that
// moves it on ahead of anything once it can go on, and ends with its reply, a failure, or the session's end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor } from 'xstate';
import type { PausedTurn } from '../../src/machines/session.ts';
import { persistedByMachine, persistedSnapshot } from '../../src/machines/session-snapshot.ts';
import { BEFORE, EXPIRES, harness, op, SESSION, submit } from '../helpers/machine.ts';

const resumeId = `resume_${SESSION}`;

/** A paused turn whose calls `a` (the user's) and `b` (the operator's) wait until `until`. */
const pausedTurn = (until = BEFORE + 100): PausedTurn => ({
  turnId: 'turn_1',
  replyId: 'msg_reply',
  key: 'k1',
  waiting: [
    { id: 'a', approver: 'user', expiresAt: until },
    { id: 'b', approver: 'operator', expiresAt: until },
  ],
});

/** A session whose send `t1` paused its turn (committed) and ended. */
async function pausedSession(paused = pausedTurn()) {
  const h = harness();
  const actor = h.start();
  actor.send(submit(op('t1', { key: 'k1', fingerprint: 'f1' })));
  actor.send({ type: 'TOOLS_CALLED', calls: 0, paused });
  await h.resolve('t1');
  return { h, actor };
}

describe('session machine: a paused turn', () => {
  it('pauses when the operation that paused it ends, and keeps the turn and its waiting calls', async () => {
    const { actor } = await pausedSession();
    const snap = actor.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'paused', inactivity: 'none' } });
    assert.deepEqual(snap.context.paused, pausedTurn());
    assert.equal(snap.context.current, null);
    assert.deepEqual(snap.context.inflight, {}, 'the send is over: its key is no longer in flight');
    actor.stop();
  });

  it('is stored paused, while it waits and while an operation moves it on, and restores paused', async () => {
    const { h, actor } = await pausedSession();
    const stored = persistedSnapshot(actor.getSnapshot());
    assert.equal(stored, persistedByMachine(actor.getSnapshot()));
    const json = JSON.parse(stored);
    assert.deepEqual(json.value, { active: { turn: 'paused', inactivity: 'none' } });
    assert.deepEqual(json.context.paused, pausedTurn());

    // A decision runs: the snapshot its commit stores has the calls decided, and is still paused.
    actor.send(submit({ id: 'd1', kind: 'decide' }));
    assert.deepEqual(h.started, ['t1', 'd1']);
    const decided = JSON.parse(
      persistedSnapshot(actor.getSnapshot(), { type: 'DECIDED', callIds: ['a', 'b'] }),
    );
    assert.deepEqual(decided.value, { active: { turn: 'paused', inactivity: 'none' } });
    assert.deepEqual(decided.context.paused.waiting, []);
    assert.deepEqual(decided.context.queue, []);

    const restored = createActor(h.machine, {
      snapshot: JSON.parse(stored),
      input: { sessionId: 'ignored', expiresAt: 0 },
    }).start();
    assert.ok(restored.getSnapshot().matches({ active: { turn: 'paused' } }));
    assert.deepEqual(restored.getSnapshot().context.paused, pausedTurn());
    restored.stop();
    actor.stop();
  });

  it('refuses sends and inactivity messages with approval_pending while a call waits, and runs decisions, cancels and terminates', async () => {
    const { h, actor } = await pausedSession();
    actor.send(submit(op('t2')));
    actor.send(submit({ id: 'i1', kind: 'inactivity' }));
    assert.deepEqual(h.rejected, [
      { op: 't2', code: 'approval_pending' },
      { op: 'i1', code: 'approval_pending' },
    ]);
    actor.send(submit({ id: 'd1', kind: 'decide' }));
    actor.send(submit({ id: 'x1', kind: 'terminate' }));
    actor.send(submit({ id: 'c1', kind: 'cancel' }));
    assert.deepEqual(h.started, ['t1', 'd1']);
    assert.deepEqual(
      actor.getSnapshot().context.queue.map((o) => o.id),
      ['c1', 'x1'],
      'a cancel goes ahead of what waits',
    );
    actor.stop();
  });

  it('goes on when every call is decided: the next submission queues the resume first, and the turn ends with its reply', async () => {
    const { h, actor } = await pausedSession();
    actor.send(submit({ id: 'd1', kind: 'decide' }));
    actor.send({ type: 'DECIDED', callIds: ['a'] });
    await h.resolve('d1');
    assert.deepEqual(
      actor.getSnapshot().context.paused?.waiting.map((c) => c.id),
      ['b'],
    );
    assert.ok(actor.getSnapshot().matches({ active: { turn: 'paused' } }));

    actor.send(submit({ id: 'd2', kind: 'decide' }));
    actor.send({ type: 'DECIDED', callIds: ['b'] });
    // The decision's operation dies before the turn went on (its process stopped, say): still paused.
    await h.fail('d2');
    assert.ok(actor.getSnapshot().matches({ active: { turn: 'paused' } }));
    assert.deepEqual(actor.getSnapshot().context.paused?.waiting, []);

    // A send now is not refused: the resume runs first, then the send.
    actor.send(submit(op('t2')));
    assert.deepEqual(h.started, ['t1', 'd1', 'd2', resumeId]);
    assert.deepEqual(
      actor.getSnapshot().context.queue.map((o) => o.id),
      ['t2'],
    );
    // A second resume submitted meanwhile (the sweep) queues behind it, and finds nothing to do.
    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 10, byUser: false, turnEnded: true });
    assert.equal(actor.getSnapshot().context.paused, undefined);
    await h.resolve(resumeId);
    assert.deepEqual(h.started, ['t1', 'd1', 'd2', resumeId, 't2']);
    await h.resolve('t2');
    assert.ok(actor.getSnapshot().matches({ active: { turn: 'idle' } }));
    assert.deepEqual(h.rejected, []);
    actor.stop();
  });

  it('lets a send through once the waiting calls expired, after the resume that denies them', async () => {
    const { h, actor } = await pausedSession(pausedTurn(BEFORE - 100));
    actor.send(submit(op('early'), BEFORE - 101));
    assert.deepEqual(h.rejected, [{ op: 'early', code: 'approval_pending' }]);
    actor.send(submit(op('late'), BEFORE - 100));
    assert.deepEqual(h.started, ['t1', resumeId]);
    assert.deepEqual(
      actor.getSnapshot().context.queue.map((o) => o.id),
      ['late'],
    );
    actor.stop();
  });

  it('submitting the resume itself queues it once', async () => {
    const { h, actor } = await pausedSession(pausedTurn(BEFORE - 1));
    actor.send(submit({ id: resumeId, kind: 'resume' }));
    assert.deepEqual(h.started, ['t1', resumeId]);
    assert.deepEqual(actor.getSnapshot().context.queue, []);
    actor.stop();
  });

  it('ends without a reply on TURN_ENDED, and with the session on CLOSED or EXPIRED', async () => {
    for (const end of [
      { type: 'TURN_ENDED' as const },
      { type: 'CLOSED' as const, closedAt: 'now', reason: null },
      { type: 'EXPIRED' as const },
    ]) {
      const { actor } = await pausedSession();
      actor.send(end);
      assert.equal(actor.getSnapshot().context.paused, undefined, end.type);
      const stored = JSON.parse(persistedSnapshot(actor.getSnapshot()));
      assert.equal('paused' in stored.context, false, 'nothing of it is stored');
      if (end.type === 'TURN_ENDED') assert.ok(actor.getSnapshot().matches({ active: { turn: 'idle' } }));
      actor.stop();
    }
  });

  it('stores nothing of a paused turn for a session without one, as snapshots stored before turns could pause', () => {
    const h = harness();
    const old = JSON.parse(persistedSnapshot(h.start().getSnapshot()));
    assert.equal('paused' in old.context, false);
    const actor = createActor(h.machine, { snapshot: old, input: { sessionId: 'x', expiresAt: 0 } }).start();
    assert.ok(actor.getSnapshot().matches({ active: { turn: 'idle' } }));
    actor.send(submit(op('t1')));
    assert.deepEqual(h.started, ['t1']);
    assert.deepEqual(h.rejected, []);
    actor.stop();
  });
});
