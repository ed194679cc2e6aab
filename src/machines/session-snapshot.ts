// What is stored of a session's machine (session.ts): the snapshot each commit writes, settled (no operation
// queued or running) with the commit's event applied, and the snapshot of a new session. Pure, like the machine.
import { createActor } from 'xstate';
import { type SessionEvent, type SessionInput, type SessionSnapshot, sessionMachine } from './session.ts';

/**
 * The snapshot to store: `snapshot` settled and, when given, `event` applied. Settled means with no
 * operation queued or running: those belong to callers waiting on this process, who are gone after a crash,
 * and a retry under its Idempotency-Key finds the committed part of the work in the store. A paused turn is
 * kept (the turn region `paused`), also while an operation moves it on: if its process dies, the session's
 * next owner finds it there and moves it on again. The event is
 * applied by a stand-in actor of the unprovided machine restored from the settled snapshot, so it takes the
 * live actor's transitions while no host action runs and the live actor is not touched (its event is sent
 * only once the commit succeeded).
 */
export function persistedSnapshot(snapshot: SessionSnapshot, event?: SessionEvent): string {
  const direct = settledDirectly(snapshot, event);
  if (direct) return JSON.stringify(direct);
  return persistedByMachine(snapshot, event);
}

/**
 * What persistedByMachine gives, written out for the commits of every turn (an active session, no event or
 * ACTIVITY, WARNED, TOOLS_CALLED, TOOL_RESULT): a stand-in actor costs ~0.1 ms per commit, two or more per
 * turn. Null for anything else, which takes the machine. test/machines/session.test.ts checks the two agree
 * on every state and event this covers.
 */
function settledDirectly(snapshot: SessionSnapshot, event?: SessionEvent) {
  const { value, context } = snapshot;
  if (typeof value === 'string' || snapshot.status !== 'active') return null;
  // A paused turn, and the events that pause one, take the machine (rare: only turns that wait for approvals).
  if (context.paused !== undefined) return null;
  let { inactivity } = value.active;
  let { expiresAt } = context;
  switch (event?.type) {
    case 'TOOLS_CALLED':
      // A step that pauses the turn is kept (by the machine); a settled turn takes no other tool event.
      if (event.paused) return null;
      break;
    case undefined:
    case 'TOOL_RESULT':
    case 'TURN_ENDED':
      break;
    case 'ACTIVITY':
      if (event.handoff) return null;
      expiresAt = event.expiresAt;
      if (event.byUser) inactivity = 'none';
      break;
    case 'WARNED':
      inactivity = 'warned';
      break;
    default:
      return null;
  }
  return {
    status: 'active',
    value: { active: { turn: 'idle', inactivity } },
    historyValue: {},
    context: {
      ...context,
      expiresAt,
      queue: [],
      current: null,
      inflight: {},
      steps: 0,
      pendingCalls: 0,
      paused: undefined,
    },
    children: {},
  };
}

/** persistedSnapshot through the machine itself: a stand-in actor restored from the settled snapshot. */
export function persistedByMachine(snapshot: SessionSnapshot, event?: SessionEvent): string {
  const { value, context } = snapshot;
  const { paused } = context;
  const turn = paused ? 'paused' : 'idle';
  const settled = sessionMachine.resolveState({
    value: typeof value === 'string' ? value : { active: { ...value.active, turn } },
    context: { ...context, queue: [], current: null, inflight: {}, steps: 0, pendingCalls: 0, paused },
  });
  if (!event) return JSON.stringify(sessionMachine.getPersistedSnapshot(settled));
  // The input is required by the types and unused when restoring a snapshot.
  const input = { sessionId: context.sessionId, expiresAt: context.expiresAt };
  const standIn = createActor(sessionMachine, { snapshot: settled, input }).start();
  standIn.send(event);
  const persisted = standIn.getPersistedSnapshot();
  standIn.stop();
  return JSON.stringify(persisted);
}

/** The persisted snapshot of a new session. */
export function initialPersistedSnapshot(input: SessionInput): string {
  return JSON.stringify(createActor(sessionMachine, { input }).getPersistedSnapshot());
}
