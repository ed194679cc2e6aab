// The session machine's handoff (docs/guides/humans.md): HANDED_OFF and HANDED_BACK set and clear the
// context's handoff, an ACTIVITY carrying one (the agent's handoff_to_human, with its reply) sets it, and the
// snapshot each commit stores keeps it, so that a session restored elsewhere is still handled by people.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor } from 'xstate';
import { sessionMachine } from '../../src/machines/session.ts';
import { persistedSnapshot } from '../../src/machines/session-snapshot.ts';
import { EXPIRES, harness, op, SESSION, submit } from '../helpers/machine.ts';

const handoff = { requested_at: '2026-03-02T09:00:00.000Z', reason: 'VIP', by: 'integrator' as const };

/** A started actor of the unprovided machine restored from a stored snapshot. */
const restored = (json: string) =>
  createActor(sessionMachine, {
    snapshot: JSON.parse(json),
    input: { sessionId: 'x', expiresAt: 0 },
  }).start();

describe('session machine: handoff', () => {
  it('sets the handoff on HANDED_OFF and clears it on HANDED_BACK, operations running as before', () => {
    const h = harness();
    const actor = h.start();
    actor.send({ type: 'HANDED_OFF', handoff });
    assert.deepEqual(actor.getSnapshot().context.handoff, handoff);
    actor.send(submit(op('a'), EXPIRES - 1));
    assert.deepEqual(h.started, ['a']);
    actor.send({ type: 'HANDED_BACK' });
    assert.equal(actor.getSnapshot().context.handoff, undefined);
    actor.stop();
  });

  it('stores the handoff in the snapshot of the commit that makes it, and keeps it in the later ones', () => {
    const actor = createActor(sessionMachine, { input: { sessionId: SESSION, expiresAt: EXPIRES } }).start();
    const handedOff = persistedSnapshot(actor.getSnapshot(), { type: 'HANDED_OFF', handoff });
    const again = restored(handedOff);
    assert.deepEqual(again.getSnapshot().context.handoff, handoff);
    // A later commit (a send stored for people) keeps it.
    const later = persistedSnapshot(again.getSnapshot(), {
      type: 'ACTIVITY',
      expiresAt: EXPIRES + 1,
      byUser: true,
    });
    assert.deepEqual(restored(later).getSnapshot().context.handoff, handoff);
    const back = persistedSnapshot(again.getSnapshot(), { type: 'HANDED_BACK' });
    assert.equal(restored(back).getSnapshot().context.handoff, undefined);
    actor.stop();
  });

  it('sets the handoff from the ACTIVITY of a reply whose model handed off, in the live actor and the snapshot', () => {
    const byAgent = { ...handoff, by: 'agent' as const };
    const event = { type: 'ACTIVITY' as const, expiresAt: EXPIRES + 5, byUser: false, handoff: byAgent };
    const actor = createActor(sessionMachine, { input: { sessionId: SESSION, expiresAt: EXPIRES } }).start();
    const stored = restored(persistedSnapshot(actor.getSnapshot(), event)).getSnapshot().context;
    assert.deepEqual([stored.handoff, stored.expiresAt], [byAgent, EXPIRES + 5]);
    actor.send(event);
    assert.deepEqual(actor.getSnapshot().context.handoff, byAgent);
    actor.stop();
  });
});
