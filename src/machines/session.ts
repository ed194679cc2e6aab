// The session machine: pure, no I/O. It holds what one session is (active with a turn region idle/running
// and an inactivity region none/warned; final closed and expired), its queue of operations (one runs at a
// time) and the Idempotency-Keys in flight. The host provides `operate` (starts the I/O of one operation and
// sends DONE when it has finished) and the actions that answer waiting callers. State changes come in as
// events only after their commit.
import {
  type ActorRefFrom,
  type ActorScope,
  assign,
  createActor,
  initialTransition,
  type SnapshotFrom,
  setup,
} from 'xstate';

export type OperationKind = 'send' | 'terminate' | 'inactivity' | 'expire';

/** A unit of work on the session. JSON only: it is part of the snapshot while it runs. */
export interface Operation {
  id: string;
  kind: OperationKind;
  /** Idempotency-Key and the request's fingerprint, when the caller sent a key. */
  key?: string;
  fingerprint?: string;
  payload?: unknown;
}

/** What `operate` is given: the operation, and the session it belongs to (one provided machine serves all). */
export interface OperateInput {
  sessionId: string;
  op: Operation;
}

export type RejectCode = 'session_busy' | 'idempotency_key_reused' | 'session_closed' | 'session_expired';

export interface SessionInput {
  sessionId: string;
  /** Epoch milliseconds after which the session counts as expired. */
  expiresAt: number;
  /** Operations that may wait behind the running one (DESIGN.md §4: 8). */
  maxWaiting?: number;
}

export interface SessionContext {
  sessionId: string;
  expiresAt: number;
  closedAt: string | null;
  closeReason: string | null;
  maxWaiting: number;
  queue: Operation[];
  current: Operation | null;
  /** Idempotency-Key → the operation that carries it, while queued or running. */
  inflight: Record<string, { opId: string; fingerprint: string }>;
}

export type SessionEvent =
  /** A caller asks for an operation; `at` is the caller's clock (epoch ms), for the expiry check. */
  | { type: 'SUBMIT'; op: Operation; at: number }
  /** Committed: messages were stored; `byUser` when one of them came from the user. */
  | { type: 'ACTIVITY'; expiresAt: number; byUser: boolean }
  /** Committed: the inactivity warning was stored. */
  | { type: 'WARNED' }
  /** Committed: the session was closed. */
  | { type: 'CLOSED'; closedAt: string; reason: string | null }
  /** Committed: the session expired. */
  | { type: 'EXPIRED' }
  /** The operation `opId` has finished, whatever its outcome (its callers are answered). */
  | { type: 'DONE'; opId: string };

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionInput,
  },
  actions: {
    /**
     * Starts `op`; the host sends DONE with its id once it has finished. An action rather than an invoked
     * promise actor: creating a child actor per operation made SUBMIT by far the costliest event of a turn.
     */
    operate: (_, _params: OperateInput) => {},
    /** Answers the caller of `op` with an error; nothing was done. */
    reject: (_, _params: { op: Operation; code: RejectCode }) => {},
    /** Answers the caller of `op` with the result of the operation `target` (same key, same request). */
    join: (_, _params: { op: Operation; target: string }) => {},
    /** Answers every caller of `ops` with an error (the session closed or expired under them). */
    rejectAll: (_, _params: { ops: Operation[]; code: RejectCode }) => {},
    dequeue: assign(({ context }) => ({ current: context.queue[0] ?? null, queue: context.queue.slice(1) })),
    finish: assign(({ context }) => {
      const inflight = { ...context.inflight };
      if (context.current?.key) delete inflight[context.current.key];
      return { current: null, inflight };
    }),
    clearOperations: assign({ queue: [], current: null, inflight: {} }),
    applyActivity: assign(({ event }) => (event.type === 'ACTIVITY' ? { expiresAt: event.expiresAt } : {})),
  },
  guards: {
    joinsInflight: ({ context, event }) =>
      event.type === 'SUBMIT' &&
      event.op.key !== undefined &&
      event.op.key in context.inflight &&
      context.inflight[event.op.key]?.fingerprint === event.op.fingerprint,
    keyInflight: ({ context, event }) =>
      event.type === 'SUBMIT' && event.op.key !== undefined && event.op.key in context.inflight,
    queueFull: ({ context }) => context.queue.length >= context.maxWaiting,
    pastExpiry: ({ context, event }) => event.type === 'SUBMIT' && event.at >= context.expiresAt,
    hasQueued: ({ context }) => context.queue.length > 0,
    byUser: ({ event }) => event.type === 'ACTIVITY' && event.byUser,
    isCurrent: ({ context, event }) => event.type === 'DONE' && context.current?.id === event.opId,
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({
    sessionId: input.sessionId,
    expiresAt: input.expiresAt,
    closedAt: null,
    closeReason: null,
    maxWaiting: input.maxWaiting ?? 8,
    queue: [],
    current: null,
    inflight: {},
  }),
  initial: 'active',
  states: {
    active: {
      type: 'parallel',
      on: {
        SUBMIT: [
          {
            guard: 'joinsInflight',
            actions: {
              type: 'join',
              params: ({ context, event }) => ({
                op: event.op,
                target: context.inflight[event.op.key ?? '']?.opId ?? '',
              }),
            },
          },
          {
            guard: 'keyInflight',
            actions: {
              type: 'reject',
              params: ({ event }) => ({ op: event.op, code: 'idempotency_key_reused' }),
            },
          },
          {
            guard: 'queueFull',
            actions: { type: 'reject', params: ({ event }) => ({ op: event.op, code: 'session_busy' }) },
          },
          {
            // Expiry is committed by an operation of its own, ahead of everything else waiting.
            guard: 'pastExpiry',
            actions: assign(({ context, event }) => {
              const expireId = `expire_${context.sessionId}`;
              const pending =
                context.current?.id === expireId || context.queue.some((o) => o.id === expireId);
              const expire: Operation[] = pending ? [] : [{ id: expireId, kind: 'expire' }];
              return { queue: [...expire, ...context.queue, event.op], inflight: track(context, event.op) };
            }),
          },
          {
            actions: assign(({ context, event }) => ({
              queue: [...context.queue, event.op],
              inflight: track(context, event.op),
            })),
          },
        ],
        ACTIVITY: { actions: 'applyActivity' },
        CLOSED: {
          target: 'closed',
          actions: [
            assign(({ event }) => ({ closedAt: event.closedAt, closeReason: event.reason })),
            {
              type: 'rejectAll',
              params: ({ context }) => ({ ops: context.queue, code: 'session_closed' as const }),
            },
            'clearOperations',
          ],
        },
        EXPIRED: {
          target: 'expired',
          actions: [
            {
              type: 'rejectAll',
              params: ({ context }) => ({ ops: context.queue, code: 'session_expired' as const }),
            },
            'clearOperations',
          ],
        },
      },
      states: {
        turn: {
          initial: 'idle',
          states: {
            idle: { always: { guard: 'hasQueued', target: 'running', actions: 'dequeue' } },
            running: {
              entry: {
                type: 'operate',
                params: ({ context }) => ({
                  sessionId: context.sessionId,
                  op: context.current ?? { id: 'none', kind: 'expire' },
                }),
              },
              on: { DONE: { guard: 'isCurrent', target: 'idle', actions: 'finish' } },
            },
          },
        },
        inactivity: {
          initial: 'none',
          states: {
            none: { on: { WARNED: 'warned' } },
            warned: { on: { ACTIVITY: { guard: 'byUser', target: 'none', actions: 'applyActivity' } } },
          },
        },
      },
    },
    closed: { type: 'final' },
    expired: { type: 'final' },
  },
});

function track(context: SessionContext, op: Operation): SessionContext['inflight'] {
  if (op.key === undefined || op.fingerprint === undefined) return context.inflight;
  return { ...context.inflight, [op.key]: { opId: op.id, fingerprint: op.fingerprint } };
}

export type SessionMachine = typeof sessionMachine;
export type SessionSnapshot = SnapshotFrom<SessionMachine>;
export type SessionActor = ActorRefFrom<SessionMachine>;
export type SessionStatus = 'active' | 'closed' | 'expired';

export function statusOf(snapshot: SessionSnapshot): SessionStatus {
  if (snapshot.matches('closed')) return 'closed';
  if (snapshot.matches('expired')) return 'expired';
  return 'active';
}

/**
 * A scope for computing transitions without running anything: actions go nowhere, children are not started.
 * xstate's own `transition()` builds one (a whole actor) per call; one per machine is enough.
 */
const inertScopes = new WeakMap<SessionMachine, ActorScope<SessionSnapshot, SessionEvent>>();

function inertScope(machine: SessionMachine): ActorScope<SessionSnapshot, SessionEvent> {
  let scope = inertScopes.get(machine);
  if (!scope) {
    const self = createActor(machine, { input: { sessionId: '', expiresAt: 0 } });
    scope = {
      self,
      id: '',
      sessionId: '',
      system: self.system,
      logger: () => {},
      defer: () => {},
      emit: () => {},
      stopChild: () => {},
      actionExecutor: () => {},
    };
    inertScopes.set(machine, scope);
  }
  return scope;
}

/**
 * The snapshot to store: `snapshot` after `event` (when given), with no operation in flight. What is
 * queued or running belongs to callers still waiting on this process; after a crash they are gone, and a
 * retry (with its Idempotency-Key) finds the committed part of the work in the store. Settling is written
 * out here rather than as a transition because it runs twice per turn: the turn region is idle and the
 * queue, the running operation, the keys in flight and the running child are gone.
 */
export function persistedSnapshot(
  machine: SessionMachine,
  snapshot: SessionSnapshot,
  event?: SessionEvent,
): string {
  const next = event ? machine.transition(snapshot, event, inertScope(machine)) : snapshot;
  // xstate types the persisted snapshot as any snapshot; a machine snapshot has these fields.
  const persisted = machine.getPersistedSnapshot(next) as unknown as PersistedSession;
  if (next.status !== 'active' || typeof persisted.value !== 'object' || !('active' in persisted.value)) {
    return JSON.stringify(persisted);
  }
  return JSON.stringify({
    ...persisted,
    value: { active: { ...persisted.value.active, turn: 'idle' } },
    context: { ...persisted.context, queue: [], current: null, inflight: {} },
    children: {},
  });
}

/** The parts of xstate's persisted snapshot that settling touches. */
interface PersistedSession {
  value: string | { active: { turn: string; inactivity: string } };
  context: SessionContext;
  children: Record<string, unknown>;
}

/** The persisted snapshot of a new session. */
export function initialPersistedSnapshot(machine: SessionMachine, input: SessionInput): string {
  const [snapshot] = initialTransition(machine, input);
  return JSON.stringify(machine.getPersistedSnapshot(snapshot));
}
