// The session machine on its own: no store, no network, no timers. `operate` starts an operation that the
// test finishes by hand (sending DONE, as the host does), and the host's answers (reject, join, rejectAll)
// are recorded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createActor } from 'xstate';
import {
  mayCallTools,
  type SessionContext,
  type SessionEvent,
  type SessionMachine,
  type SessionSnapshot,
  sessionMachine,
  statusOf,
} from '../../src/machines/session.ts';
import {
  initialPersistedSnapshot,
  persistedByMachine,
  persistedSnapshot,
} from '../../src/machines/session-snapshot.ts';

import { EXPIRES, harness, op, SESSION, submit } from '../helpers/machine.ts';

/** The context of a session with nothing in flight. */
function settledContext(overrides: Partial<SessionContext> = {}): SessionContext {
  return {
    sessionId: SESSION,
    expiresAt: EXPIRES,
    closedAt: null,
    closeReason: null,
    maxWaiting: 8,
    queue: [],
    current: null,
    inflight: {},
    steps: 0,
    pendingCalls: 0,
    ...overrides,
  };
}

/**
 * Restores a persisted snapshot (a JSON string) into a started actor of `machine`. The input is required by
 * the types and ignored on restore; it is deliberately different from every session in these tests.
 */
function restore(machine: SessionMachine, json: string) {
  return createActor(machine, {
    snapshot: JSON.parse(json),
    input: { sessionId: 'ignored', expiresAt: 0, maxWaiting: 99 },
  }).start();
}

/** The state value a snapshot should persist as: the same, with the turn settled to idle. */
function settledValue(value: SessionSnapshot['value']): unknown {
  return typeof value === 'string' ? value : { active: { ...value.active, turn: 'idle' } };
}

describe('session machine: the turn', () => {
  it('runs operations one at a time in submission order, each starting only when the previous settles', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send(submit(op('b')));
    actor.send(submit(op('c')));
    assert.deepEqual(h.started, ['a']);
    let snap = actor.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: { running: 'thinking' }, inactivity: 'none' } });
    assert.equal(snap.context.current?.id, 'a');
    assert.deepEqual(
      snap.context.queue.map((o) => o.id),
      ['b', 'c'],
    );

    await h.resolve('a');
    assert.deepEqual(h.started, ['a', 'b']);
    snap = actor.getSnapshot();
    assert.equal(snap.context.current?.id, 'b');
    assert.deepEqual(
      snap.context.queue.map((o) => o.id),
      ['c'],
    );

    await h.fail('b');
    assert.deepEqual(h.started, ['a', 'b', 'c'], 'a rejected operation frees the turn too');
    assert.equal(actor.getSnapshot().context.current?.id, 'c');

    await h.resolve('c');
    snap = actor.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'idle', inactivity: 'none' } });
    assert.equal(snap.context.current, null);
    assert.deepEqual(snap.context.queue, []);
    assert.equal(snap.status, 'active');
    assert.deepEqual(h.rejected, []);
    actor.stop();
  });

  it('starts an operation submitted to an idle session at once, and again after the queue drained', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    await h.resolve('a');
    assert.ok(actor.getSnapshot().matches({ active: { turn: 'idle' } }));
    actor.send(submit(op('b')));
    assert.deepEqual(h.started, ['a', 'b']);
    assert.ok(actor.getSnapshot().matches({ active: { turn: { running: 'thinking' } } }));
    actor.stop();
  });

  it("moves the session's lifetime with a DONE that carries its operation's last activity, and keeps it without one", () => {
    const h = harness();
    const actor = h.start();
    const before = actor.getSnapshot().context.expiresAt;
    actor.send(submit(op('a')));
    actor.send({ type: 'DONE', opId: 'a', expiresAt: before + 60_000 });
    assert.equal(actor.getSnapshot().context.expiresAt, before + 60_000);
    assert.ok(actor.getSnapshot().matches({ active: { turn: 'idle', inactivity: 'none' } }));
    actor.send(submit(op('b')));
    actor.send({ type: 'DONE', opId: 'b' });
    assert.equal(actor.getSnapshot().context.expiresAt, before + 60_000);
    actor.send(submit(op('c')));
    actor.send({ type: 'DONE', opId: 'elsewhere', expiresAt: before + 120_000 });
    assert.equal(
      actor.getSnapshot().context.expiresAt,
      before + 60_000,
      'a DONE of another operation moves nothing',
    );
    actor.stop();
  });

  it('ignores a DONE that names an operation other than the running one', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send(submit(op('b')));
    actor.send({ type: 'DONE', opId: 'b' });
    actor.send({ type: 'DONE', opId: 'elsewhere' });
    const snap = actor.getSnapshot();
    assert.ok(snap.matches({ active: { turn: { running: 'thinking' } } }));
    assert.equal(snap.context.current?.id, 'a');
    assert.deepEqual(h.started, ['a']);
    actor.stop();
  });

  it('lets at most eight operations wait by default and rejects the next with session_busy without queueing it', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('running')));
    for (let i = 1; i <= 8; i++) actor.send(submit(op(`w${i}`)));
    assert.equal(actor.getSnapshot().context.queue.length, 8);
    assert.deepEqual(h.rejected, []);

    actor.send(submit(op('extra', { key: 'k-extra', fingerprint: 'f' })));
    assert.deepEqual(h.rejected, [{ op: 'extra', code: 'session_busy' }]);
    const snap = actor.getSnapshot();
    assert.equal(snap.context.queue.length, 8);
    assert.ok(!snap.context.queue.some((o) => o.id === 'extra'));
    assert.deepEqual(snap.context.inflight, {}, 'a rejected operation does not hold its key');

    // Once the running one settles, one place frees up.
    await h.resolve('running');
    assert.equal(actor.getSnapshot().context.queue.length, 7);
    actor.send(submit(op('later')));
    assert.equal(actor.getSnapshot().context.queue.length, 8);
    assert.equal(h.rejected.length, 1);
    actor.stop();
  });

  it('honours a smaller maxWaiting from the input', () => {
    const h = harness();
    const actor = h.start({ maxWaiting: 1 });
    actor.send(submit(op('a')));
    actor.send(submit(op('b')));
    actor.send(submit(op('c')));
    assert.deepEqual(h.rejected, [{ op: 'c', code: 'session_busy' }]);
    assert.deepEqual(
      actor.getSnapshot().context.queue.map((o) => o.id),
      ['b'],
    );
    actor.stop();
  });
});

describe('session machine: Idempotency-Keys', () => {
  it('joins a submission with the same key and fingerprint to the running operation', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' })));
    actor.send(submit(op('a2', { key: 'k1', fingerprint: 'f1' })));
    assert.deepEqual(h.joined, [{ op: 'a2', target: 'a' }]);
    assert.deepEqual(actor.getSnapshot().context.queue, [], 'a joined submission is not queued');
    assert.deepEqual(h.started, ['a']);
    actor.stop();
  });

  it('joins a submission with the same key and fingerprint to a queued operation', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send(submit(op('b', { key: 'k2', fingerprint: 'f2' })));
    actor.send(submit(op('b2', { key: 'k2', fingerprint: 'f2' })));
    assert.deepEqual(h.joined, [{ op: 'b2', target: 'b' }]);
    assert.deepEqual(
      actor.getSnapshot().context.queue.map((o) => o.id),
      ['b'],
    );
    actor.stop();
  });

  it('joins even when the queue is full, since nothing new waits', () => {
    const h = harness();
    const actor = h.start({ maxWaiting: 1 });
    actor.send(submit(op('a')));
    actor.send(submit(op('b', { key: 'k', fingerprint: 'f' })));
    actor.send(submit(op('b2', { key: 'k', fingerprint: 'f' })));
    assert.deepEqual(h.joined, [{ op: 'b2', target: 'b' }]);
    assert.deepEqual(h.rejected, []);
    actor.stop();
  });

  it('rejects the same key with another fingerprint with idempotency_key_reused', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' })));
    actor.send(submit(op('b', { key: 'k1', fingerprint: 'other' })));
    assert.deepEqual(h.rejected, [{ op: 'b', code: 'idempotency_key_reused' }]);
    assert.deepEqual(h.joined, []);
    assert.deepEqual(actor.getSnapshot().context.queue, []);
    assert.deepEqual(actor.getSnapshot().context.inflight, { k1: { opId: 'a', fingerprint: 'f1' } });
    actor.stop();
  });

  it('forgets a key once its operation finished, whether it succeeded or failed', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' })));
    actor.send(submit(op('b', { key: 'k2', fingerprint: 'f2' })));
    assert.deepEqual(actor.getSnapshot().context.inflight, {
      k1: { opId: 'a', fingerprint: 'f1' },
      k2: { opId: 'b', fingerprint: 'f2' },
    });
    await h.resolve('a');
    assert.deepEqual(actor.getSnapshot().context.inflight, { k2: { opId: 'b', fingerprint: 'f2' } });
    await h.fail('b');
    assert.deepEqual(actor.getSnapshot().context.inflight, {});

    // The key is free: a new submission with it (even with another fingerprint) runs as a new operation.
    actor.send(submit(op('c', { key: 'k1', fingerprint: 'different' })));
    assert.deepEqual(h.joined, []);
    assert.deepEqual(h.rejected, []);
    assert.deepEqual(h.started, ['a', 'b', 'c']);
    assert.deepEqual(actor.getSnapshot().context.inflight, { k1: { opId: 'c', fingerprint: 'different' } });
    actor.stop();
  });
});

describe('session machine: expiry and activity', () => {
  it('queues one expire operation ahead of everything waiting when a submission comes at or after expiresAt', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send(submit(op('b')));
    actor.send(submit(op('late1'), EXPIRES)); // exactly at expiresAt counts
    actor.send(submit(op('late2'), EXPIRES + 5));
    const snap = actor.getSnapshot();
    assert.equal(snap.context.current?.id, 'a');
    assert.deepEqual(snap.context.queue, [
      { id: `expire_${SESSION}`, kind: 'expire' },
      op('b'),
      op('late1'),
      op('late2'),
    ]);
    await h.resolve('a');
    assert.deepEqual(h.started, ['a', `expire_${SESSION}`]);
    // While the expire operation runs, no second one is queued.
    actor.send(submit(op('late3'), EXPIRES + 10));
    assert.equal(actor.getSnapshot().context.queue.filter((o) => o.kind === 'expire').length, 0);
    assert.deepEqual(
      actor.getSnapshot().context.queue.map((o) => o.id),
      ['b', 'late1', 'late2', 'late3'],
    );
    actor.stop();
  });

  it('runs the expire operation first, then the submission, on an idle session', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('late', { key: 'k', fingerprint: 'f' }), EXPIRES + 1));
    assert.deepEqual(h.started, [`expire_${SESSION}`]);
    const snap = actor.getSnapshot();
    assert.deepEqual(snap.context.current, { id: `expire_${SESSION}`, kind: 'expire' });
    assert.deepEqual(snap.context.queue, [op('late', { key: 'k', fingerprint: 'f' })]);
    assert.deepEqual(snap.context.inflight, { k: { opId: 'late', fingerprint: 'f' } });
    actor.stop();
  });

  it('does not queue an expire operation before expiresAt', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a'), EXPIRES - 1));
    assert.deepEqual(h.started, ['a']);
    actor.stop();
  });

  it('moves expiresAt on ACTIVITY, so a submission past the old deadline is not an expiry', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 1000, byUser: false });
    assert.equal(actor.getSnapshot().context.expiresAt, EXPIRES + 1000);
    actor.send(submit(op('a'), EXPIRES + 500));
    assert.deepEqual(h.started, ['a']);
    actor.send(submit(op('b'), EXPIRES + 1000));
    assert.equal(actor.getSnapshot().context.queue[0]?.kind, 'expire');
    actor.stop();
  });
});

describe('session machine: closing and expiring', () => {
  it('moves to closed on CLOSED, keeps closedAt and reason, and rejects every waiting operation with session_closed', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send(submit(op('b')));
    actor.send(submit(op('c')));
    actor.send({ type: 'CLOSED', closedAt: '2024-01-01T00:00:00.000Z', reason: 'done' });
    const snap = actor.getSnapshot();
    assert.equal(snap.value, 'closed');
    assert.equal(snap.status, 'done');
    assert.equal(statusOf(snap), 'closed');
    assert.equal(snap.context.closedAt, '2024-01-01T00:00:00.000Z');
    assert.equal(snap.context.closeReason, 'done');
    assert.deepEqual(h.rejectedAll, [{ ops: ['b', 'c'], code: 'session_closed' }]);
  });

  it('keeps a null close reason', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'CLOSED', closedAt: '2024-01-01T00:00:00.000Z', reason: null });
    assert.equal(actor.getSnapshot().context.closeReason, null);
    assert.deepEqual(h.rejectedAll, [{ ops: [], code: 'session_closed' }]);
  });

  it('moves to expired on EXPIRED and rejects every waiting operation with session_expired', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send(submit(op('b')));
    actor.send({ type: 'EXPIRED' });
    const snap = actor.getSnapshot();
    assert.equal(snap.value, 'expired');
    assert.equal(snap.status, 'done');
    assert.equal(statusOf(snap), 'expired');
    assert.equal(snap.context.closedAt, null);
    assert.deepEqual(h.rejectedAll, [{ ops: ['b'], code: 'session_expired' }]);
  });

  it('ignores submissions and settled operations after it is final', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send({ type: 'EXPIRED' });
    actor.send(submit(op('b')));
    await h.resolve('a');
    assert.deepEqual(h.started, ['a']);
    assert.deepEqual(h.rejected, []);
    assert.equal(actor.getSnapshot().value, 'expired');
  });

  it('reports active for an active session', () => {
    const h = harness();
    const actor = h.start();
    assert.equal(statusOf(actor.getSnapshot()), 'active');
    actor.send(submit(op('a')));
    assert.equal(statusOf(actor.getSnapshot()), 'active');
    actor.stop();
  });
});

describe('session machine: inactivity', () => {
  it('is warned after WARNED, back to none after user activity, and stays warned after other activity', () => {
    const h = harness();
    const actor = h.start();
    assert.ok(actor.getSnapshot().matches({ active: { inactivity: 'none' } }));
    actor.send({ type: 'WARNED' });
    assert.ok(actor.getSnapshot().matches({ active: { inactivity: 'warned' } }));

    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 1, byUser: false });
    assert.ok(actor.getSnapshot().matches({ active: { inactivity: 'warned' } }));
    assert.equal(actor.getSnapshot().context.expiresAt, EXPIRES + 1, 'activity moves expiresAt while warned');

    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 2, byUser: true });
    assert.ok(actor.getSnapshot().matches({ active: { inactivity: 'none' } }));
    assert.equal(actor.getSnapshot().context.expiresAt, EXPIRES + 2);
    actor.stop();
  });

  it('keeps the turn running across inactivity events', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    actor.send({ type: 'WARNED' });
    assert.deepEqual(actor.getSnapshot().value, {
      active: { turn: { running: 'thinking' }, inactivity: 'warned' },
    });
    actor.stop();
  });
});

describe('session machine: persisted snapshots', () => {
  it('restores an idle session with no warning as it was', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 7, byUser: true });
    const restored = restore(h.machine, persistedSnapshot(actor.getSnapshot()));
    const snap = restored.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'idle', inactivity: 'none' } });
    assert.equal(snap.status, 'active');
    assert.deepEqual(snap.context, settledContext({ expiresAt: EXPIRES + 7 }));
    restored.stop();
    actor.stop();
  });

  it('restores an idle warned session as warned', () => {
    const h = harness();
    const actor = h.start({ maxWaiting: 3 });
    actor.send({ type: 'WARNED' });
    const restored = restore(h.machine, persistedSnapshot(actor.getSnapshot()));
    const snap = restored.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'idle', inactivity: 'warned' } });
    assert.equal(snap.status, 'active');
    assert.deepEqual(snap.context, settledContext({ maxWaiting: 3 }));
    restored.stop();
    actor.stop();
  });

  it('persists a running session with waiting operations and keys in flight as settled', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'WARNED' });
    actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' })));
    actor.send(submit(op('b', { key: 'k2', fingerprint: 'f2' })));
    actor.send(submit(op('c')));
    const live = actor.getSnapshot();
    assert.ok(live.matches({ active: { turn: { running: 'thinking' } } }));
    assert.equal(Object.keys(live.context.inflight).length, 2);

    const json = persistedSnapshot(live);
    const parsed = JSON.parse(json);
    assert.deepEqual(parsed.value, { active: { turn: 'idle', inactivity: 'warned' } });
    assert.deepEqual(parsed.children, {}, 'no invoked operation is persisted');

    const started = h.started.length;
    const restored = restore(h.machine, json);
    const snap = restored.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'idle', inactivity: 'warned' } });
    assert.equal(snap.status, 'active');
    assert.deepEqual(snap.context, settledContext());
    assert.equal(h.started.length, started, 'restoring runs nothing');
    // Computing the persisted snapshot does not disturb the live actor.
    assert.equal(actor.getSnapshot(), live);
    restored.stop();
    actor.stop();
  });

  it('restores a closed session as closed and done, with closedAt and reason', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 3, byUser: true });
    actor.send({ type: 'CLOSED', closedAt: '2024-02-02T00:00:00.000Z', reason: 'terminated' });
    const restored = restore(h.machine, persistedSnapshot(actor.getSnapshot()));
    const snap = restored.getSnapshot();
    assert.equal(snap.value, 'closed');
    assert.equal(snap.status, 'done');
    assert.equal(statusOf(snap), 'closed');
    assert.deepEqual(
      snap.context,
      settledContext({
        expiresAt: EXPIRES + 3,
        closedAt: '2024-02-02T00:00:00.000Z',
        closeReason: 'terminated',
      }),
    );
    restored.stop();
  });

  it('restores an expired session as expired and done', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'EXPIRED' });
    const restored = restore(h.machine, persistedSnapshot(actor.getSnapshot()));
    const snap = restored.getSnapshot();
    assert.equal(snap.value, 'expired');
    assert.equal(snap.status, 'done');
    assert.equal(statusOf(snap), 'expired');
    assert.deepEqual(snap.context, settledContext());
    restored.stop();
  });

  it('round-trips through JSON: a restored actor persists the very string it was restored from', () => {
    const events: SessionEvent[][] = [
      [],
      [{ type: 'WARNED' }],
      [{ type: 'ACTIVITY', expiresAt: EXPIRES + 9, byUser: false }],
      [{ type: 'CLOSED', closedAt: '2024-05-05T00:00:00.000Z', reason: 'done' }],
      [{ type: 'EXPIRED' }],
    ];
    for (const sent of events) {
      const h = harness();
      const actor = h.start({ maxWaiting: 5 });
      actor.send(submit(op('running', { key: 'k', fingerprint: 'f' })));
      for (const event of sent) actor.send(event);
      const json = persistedSnapshot(actor.getSnapshot());
      const restored = restore(h.machine, json);
      assert.equal(persistedSnapshot(restored.getSnapshot()), json, `after ${JSON.stringify(sent)}`);
      assert.equal(JSON.stringify(restored.getPersistedSnapshot()), json, 'xstate persists it alike');
      restored.stop();
      actor.stop();
    }
  });

  it('restores into the unprovided machine too, since the snapshot holds only JSON', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'ACTIVITY', expiresAt: EXPIRES + 4, byUser: true });
    const restored = restore(sessionMachine, persistedSnapshot(actor.getSnapshot()));
    assert.deepEqual(restored.getSnapshot().value, { active: { turn: 'idle', inactivity: 'none' } });
    assert.deepEqual(restored.getSnapshot().context, settledContext({ expiresAt: EXPIRES + 4 }));
    restored.stop();
    actor.stop();
  });

  for (const [name, event] of [
    ['ACTIVITY by the user', { type: 'ACTIVITY', expiresAt: EXPIRES + 50, byUser: true }],
    ['ACTIVITY by the agent', { type: 'ACTIVITY', expiresAt: EXPIRES + 60, byUser: false }],
    ['WARNED', { type: 'WARNED' }],
    ['CLOSED', { type: 'CLOSED', closedAt: '2024-03-03T00:00:00.000Z', reason: 'inactivity' }],
    ['EXPIRED', { type: 'EXPIRED' }],
  ] as [string, SessionEvent][]) {
    it(`computes, for ${name}, the same snapshot the idle actor has after receiving it`, () => {
      const h = harness();
      const actor = h.start();
      actor.send({ type: 'WARNED' });
      const ahead = persistedSnapshot(actor.getSnapshot(), event);
      actor.send(event);
      assert.deepEqual(JSON.parse(ahead), JSON.parse(persistedSnapshot(actor.getSnapshot())));
      const live = JSON.parse(JSON.stringify(h.machine.getPersistedSnapshot(actor.getSnapshot())));
      assert.deepEqual(JSON.parse(ahead), live);
      actor.stop();
    });

    it(`computes, for ${name} during a running operation, the settled snapshot the actor has after it`, () => {
      const h = harness();
      const actor = h.start();
      actor.send({ type: 'WARNED' });
      actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' })));
      actor.send(submit(op('b')));
      const ahead = persistedSnapshot(actor.getSnapshot(), event);
      actor.send(event);
      assert.deepEqual(JSON.parse(ahead), JSON.parse(persistedSnapshot(actor.getSnapshot())));
      assert.deepEqual(JSON.parse(ahead).value, settledValue(actor.getSnapshot().value));
      assert.equal(JSON.parse(ahead).context.expiresAt, actor.getSnapshot().context.expiresAt);
      actor.stop();
    });
  }

  it("writes out, for every turn's commits, the very snapshot the machine computes, in every state it can be in", async () => {
    const events: (SessionEvent | undefined)[] = [
      undefined,
      { type: 'ACTIVITY', expiresAt: EXPIRES + 70, byUser: true },
      { type: 'ACTIVITY', expiresAt: EXPIRES + 80, byUser: false },
      { type: 'WARNED' },
      { type: 'TOOLS_CALLED', calls: 0 },
      { type: 'TOOLS_CALLED', calls: 2 },
      { type: 'TOOL_RESULT' },
      { type: 'CLOSED', closedAt: '2024-03-03T00:00:00.000Z', reason: 'done' },
      { type: 'EXPIRED' },
    ];
    /** The states a commit may meet: warned or not; idle, thinking with others queued (keyed), acting. */
    const reach: ((
      h: ReturnType<typeof harness>,
      actor: ReturnType<ReturnType<typeof harness>['start']>,
    ) => void)[] = [
      () => {},
      (_, actor) => actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' }))),
      (_, actor) => {
        actor.send(submit(op('a')));
        actor.send(submit(op('b', { key: 'k2', fingerprint: 'f2' })));
        actor.send({ type: 'TOOLS_CALLED', calls: 3 });
        actor.send({ type: 'TOOL_RESULT' });
      },
    ];
    for (const warned of [false, true]) {
      for (const [n, into] of reach.entries()) {
        for (const event of events) {
          const h = harness();
          const actor = h.start();
          if (warned) actor.send({ type: 'WARNED' });
          into(h, actor);
          const snapshot = actor.getSnapshot();
          assert.deepEqual(
            JSON.parse(persistedSnapshot(snapshot, event)),
            JSON.parse(persistedByMachine(snapshot, event)),
            `warned ${warned}, state ${n}, ${JSON.stringify(event)}`,
          );
          actor.stop();
        }
      }
    }
  });

  it('applies the event before settling: a persisted CLOSED from a running session restores closed', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a')));
    const json = persistedSnapshot(actor.getSnapshot(), {
      type: 'CLOSED',
      closedAt: '2024-04-04T00:00:00.000Z',
      reason: null,
    });
    const snap = restore(h.machine, json).getSnapshot();
    assert.equal(snap.value, 'closed');
    assert.equal(snap.status, 'done');
    assert.equal(snap.context.closedAt, '2024-04-04T00:00:00.000Z');
    assert.deepEqual(h.rejectedAll, [], 'computing a snapshot runs no host action');
    actor.stop();
  });

  it('persists a session closed or expired during a running operation with no operation or key left in it', () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('terminate', { kind: 'terminate', key: 'k1', fingerprint: 'f1' })));
    actor.send(submit(op('b', { key: 'k2', fingerprint: 'f2' })));
    for (const event of [
      { type: 'CLOSED', closedAt: '2024-04-04T00:00:00.000Z', reason: 'terminated' },
      { type: 'EXPIRED' },
    ] as SessionEvent[]) {
      const snap = restore(h.machine, persistedSnapshot(actor.getSnapshot(), event)).getSnapshot();
      assert.equal(snap.status, 'done');
      assert.equal(snap.context.current, null);
      assert.deepEqual(snap.context.queue, []);
      assert.deepEqual(snap.context.inflight, {});
    }
    actor.stop();
  });

  it('lets a restored active session take new submissions and run them in order', async () => {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('old', { key: 'k', fingerprint: 'f' })));
    actor.send(submit(op('old2')));
    const json = persistedSnapshot(actor.getSnapshot());
    actor.stop();

    const restored = restore(h.machine, json);
    restored.send(submit(op('n1', { key: 'k', fingerprint: 'f' })));
    restored.send(submit(op('n2')));
    assert.deepEqual(h.joined, [], 'keys in flight before the snapshot are gone');
    assert.deepEqual(h.started, ['old', 'n1']);
    assert.deepEqual(restored.getSnapshot().value, {
      active: { turn: { running: 'thinking' }, inactivity: 'none' },
    });
    assert.deepEqual(
      restored.getSnapshot().context.queue.map((o) => o.id),
      ['n2'],
    );
    await h.resolve('n1');
    assert.deepEqual(h.started, ['old', 'n1', 'n2']);
    await h.resolve('n2');
    assert.ok(restored.getSnapshot().matches({ active: { turn: 'idle' } }));
    restored.send({ type: 'WARNED' });
    assert.ok(restored.getSnapshot().matches({ active: { inactivity: 'warned' } }));
    restored.stop();
  });

  it('restores the initial persisted snapshot to an idle session with the given deadline and an empty queue', async () => {
    const h = harness();
    const json = initialPersistedSnapshot({ sessionId: 'sess_new', expiresAt: 123_456 });
    assert.equal(typeof json, 'string');
    const restored = restore(h.machine, json);
    const snap = restored.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'idle', inactivity: 'none' } });
    assert.equal(snap.status, 'active');
    assert.equal(statusOf(snap), 'active');
    assert.deepEqual(snap.context, settledContext({ sessionId: 'sess_new', expiresAt: 123_456 }));
    assert.deepEqual(h.started, []);

    restored.send(submit(op('first'), 123_455));
    assert.deepEqual(h.started, ['first']);
    await h.resolve('first');
    restored.stop();
  });

  it('keeps maxWaiting from the input in the initial persisted snapshot', () => {
    const json = initialPersistedSnapshot({ sessionId: 's', expiresAt: 1, maxWaiting: 2 });
    assert.equal(JSON.parse(json).context.maxWaiting, 2);
  });
});

describe('session machine: tool steps', () => {
  /** An actor whose send `a` is running, with `b` waiting behind it. */
  function running() {
    const h = harness();
    const actor = h.start();
    actor.send(submit(op('a', { key: 'k1', fingerprint: 'f1' })));
    actor.send(submit(op('b')));
    return { h, actor };
  }
  const turnOf = (actor: ReturnType<typeof running>['actor']) =>
    (actor.getSnapshot().value as { active: { turn: unknown } }).active.turn;
  const stepsOf = (actor: ReturnType<typeof running>['actor']) => {
    const { steps, pendingCalls } = actor.getSnapshot().context;
    return { steps, pendingCalls };
  };

  it('starts a running operation thinking, with no step and no pending call', () => {
    const { actor } = running();
    assert.deepEqual(turnOf(actor), { running: 'thinking' });
    assert.deepEqual(stepsOf(actor), { steps: 0, pendingCalls: 0 });
    actor.stop();
  });

  it('moves from thinking to acting on TOOLS_CALLED, counting the step and its calls', () => {
    const { actor } = running();
    actor.send({ type: 'TOOLS_CALLED', calls: 3 });
    assert.deepEqual(turnOf(actor), { running: 'acting' });
    assert.deepEqual(stepsOf(actor), { steps: 1, pendingCalls: 3 });
    actor.stop();
  });

  it('stays acting until the result of the last call, then thinks again, and counts each later step', () => {
    const { actor, h } = running();
    actor.send({ type: 'TOOLS_CALLED', calls: 3 });
    actor.send({ type: 'TOOL_RESULT' });
    assert.deepEqual(turnOf(actor), { running: 'acting' });
    assert.deepEqual(stepsOf(actor), { steps: 1, pendingCalls: 2 });
    actor.send({ type: 'TOOL_RESULT' });
    assert.deepEqual(turnOf(actor), { running: 'acting' });
    assert.deepEqual(stepsOf(actor), { steps: 1, pendingCalls: 1 });
    actor.send({ type: 'TOOL_RESULT' });
    assert.deepEqual(turnOf(actor), { running: 'thinking' });
    assert.deepEqual(stepsOf(actor), { steps: 1, pendingCalls: 0 });

    actor.send({ type: 'TOOLS_CALLED', calls: 1 });
    assert.deepEqual(turnOf(actor), { running: 'acting' });
    assert.deepEqual(stepsOf(actor), { steps: 2, pendingCalls: 1 });
    actor.send({ type: 'TOOL_RESULT' });
    assert.deepEqual(turnOf(actor), { running: 'thinking' });
    assert.deepEqual(stepsOf(actor), { steps: 2, pendingCalls: 0 });
    assert.deepEqual(h.started, ['a'], 'steps run inside the one operation');
    actor.stop();
  });

  it('resumes acting on STEPS_RESUMED with calls still lacking a result', () => {
    const { actor } = running();
    actor.send({ type: 'STEPS_RESUMED', steps: 4, pending: 2 });
    assert.deepEqual(turnOf(actor), { running: 'acting' });
    assert.deepEqual(stepsOf(actor), { steps: 4, pendingCalls: 2 });
    actor.send({ type: 'TOOL_RESULT' });
    actor.send({ type: 'TOOL_RESULT' });
    assert.deepEqual(turnOf(actor), { running: 'thinking' });
    assert.deepEqual(stepsOf(actor), { steps: 4, pendingCalls: 0 });
    actor.send({ type: 'TOOLS_CALLED', calls: 1 });
    assert.deepEqual(stepsOf(actor), { steps: 5, pendingCalls: 1 });
    actor.stop();
  });

  it('stays thinking on STEPS_RESUMED with every result committed, taking the steps', () => {
    const { actor } = running();
    actor.send({ type: 'STEPS_RESUMED', steps: 3, pending: 0 });
    assert.deepEqual(turnOf(actor), { running: 'thinking' });
    assert.deepEqual(stepsOf(actor), { steps: 3, pendingCalls: 0 });
    actor.stop();
  });

  it('may call tools while fewer than max steps are committed, and not at max', () => {
    const { actor } = running();
    assert.equal(mayCallTools(actor.getSnapshot(), 2), true);
    actor.send({ type: 'TOOLS_CALLED', calls: 1 });
    actor.send({ type: 'TOOL_RESULT' });
    assert.equal(mayCallTools(actor.getSnapshot(), 2), true);
    actor.send({ type: 'TOOLS_CALLED', calls: 1 });
    actor.send({ type: 'TOOL_RESULT' });
    assert.equal(actor.getSnapshot().context.steps, 2);
    assert.equal(mayCallTools(actor.getSnapshot(), 2), false);
    assert.equal(mayCallTools(actor.getSnapshot(), 3), true);
    // A resumed turn counts its stored steps against the same limit.
    const resumed = running();
    resumed.actor.send({ type: 'STEPS_RESUMED', steps: 8, pending: 0 });
    assert.equal(mayCallTools(resumed.actor.getSnapshot(), 8), false);
    assert.equal(mayCallTools(resumed.actor.getSnapshot(), 9), true);
    resumed.actor.stop();
    actor.stop();
  });

  it('resets the steps on DONE, so the next operation starts thinking from none', async () => {
    const { actor, h } = running();
    actor.send({ type: 'TOOLS_CALLED', calls: 2 });
    actor.send({ type: 'TOOL_RESULT' });
    actor.send({ type: 'TOOL_RESULT' });
    actor.send({ type: 'TOOLS_CALLED', calls: 1 });
    assert.deepEqual(stepsOf(actor), { steps: 2, pendingCalls: 1 });
    // The turn ends while acting, as a failed one does: DONE all the same.
    await h.resolve('a');
    assert.deepEqual(h.started, ['a', 'b']);
    assert.equal(actor.getSnapshot().context.current?.id, 'b');
    assert.deepEqual(turnOf(actor), { running: 'thinking' });
    assert.deepEqual(stepsOf(actor), { steps: 0, pendingCalls: 0 });
    assert.equal(mayCallTools(actor.getSnapshot(), 1), true);
    await h.resolve('b');
    assert.deepEqual(turnOf(actor), 'idle');
    assert.deepEqual(stepsOf(actor), { steps: 0, pendingCalls: 0 });
    actor.stop();
  });

  it('ignores step events while no operation runs', () => {
    const h = harness();
    const actor = h.start();
    const before = actor.getSnapshot();
    for (const event of [
      { type: 'TOOLS_CALLED', calls: 2 },
      { type: 'TOOL_RESULT' },
      { type: 'STEPS_RESUMED', steps: 3, pending: 1 },
    ] as SessionEvent[]) {
      actor.send(event);
    }
    assert.deepEqual(actor.getSnapshot().value, before.value);
    assert.deepEqual(actor.getSnapshot().context, settledContext());
    actor.stop();
  });

  it('persists a snapshot taken mid-step as settled (turn idle, no steps), which round-trips through JSON and restores', () => {
    const { actor, h } = running();
    actor.send({ type: 'WARNED' });
    actor.send({ type: 'TOOLS_CALLED', calls: 2 });
    actor.send({ type: 'TOOL_RESULT' });
    const live = actor.getSnapshot();
    assert.ok(live.matches({ active: { turn: { running: 'acting' } } }));
    assert.deepEqual(stepsOf(actor), { steps: 1, pendingCalls: 1 });

    const json = persistedSnapshot(live);
    const parsed = JSON.parse(json);
    assert.deepEqual(parsed.value, { active: { turn: 'idle', inactivity: 'warned' } });
    assert.equal(parsed.context.steps, 0);
    assert.equal(parsed.context.pendingCalls, 0);
    // The step events themselves commit the settled snapshot: they leave no trace in it.
    for (const event of [
      { type: 'TOOL_RESULT' },
      { type: 'TOOLS_CALLED', calls: 4 },
      { type: 'STEPS_RESUMED', steps: 2, pending: 1 },
    ] as SessionEvent[]) {
      assert.equal(persistedSnapshot(live, event), json, `with ${event.type}`);
    }
    assert.equal(actor.getSnapshot(), live, 'computing it does not disturb the live actor');

    const started = h.started.length;
    const restored = restore(h.machine, json);
    const snap = restored.getSnapshot();
    assert.deepEqual(snap.value, { active: { turn: 'idle', inactivity: 'warned' } });
    assert.equal(snap.status, 'active');
    assert.deepEqual(snap.context, settledContext());
    assert.equal(h.started.length, started, 'restoring runs nothing');
    assert.equal(persistedSnapshot(snap), json);
    assert.equal(JSON.stringify(restored.getPersistedSnapshot()), json);

    // The retried turn resumes its steps from the store in the restored actor.
    restored.send(submit(op('retry', { key: 'k1', fingerprint: 'f1' })));
    restored.send({ type: 'STEPS_RESUMED', steps: 1, pending: 1 });
    assert.deepEqual(restored.getSnapshot().value, {
      active: { turn: { running: 'acting' }, inactivity: 'warned' },
    });
    restored.send({ type: 'TOOL_RESULT' });
    assert.deepEqual(restored.getSnapshot().value, {
      active: { turn: { running: 'thinking' }, inactivity: 'warned' },
    });
    assert.equal(restored.getSnapshot().context.steps, 1);
    restored.stop();
    actor.stop();
  });
});

describe('session machine module', () => {
  it('imports nothing from the HTTP layer, the store or the agents', () => {
    const source = readFileSync(new URL('../../src/machines/session.ts', import.meta.url), 'utf8');
    const specifiers = [
      ...source.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*['"]([^'"]+)['"]/gms),
      ...source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
      ...source.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
    ].map((m) => m[1]);
    assert.ok(specifiers.includes('xstate'), `found the imports: ${specifiers.join(', ')}`);
    for (const specifier of specifiers) {
      assert.doesNotMatch(specifier, /(^|\/)(http|store|agents)(\/|\.ts$|$)/, `imports ${specifier}`);
    }
  });
});
