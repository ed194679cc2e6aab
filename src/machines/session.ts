// The session machine: pure, no I/O. It holds what one session is (active with a turn region idle, running or
// paused and an inactivity region none/warned; final closed and expired), its queue of operations (one runs at
// a time) and the Idempotency-Keys in flight. A running send goes through steps
// (docs/internals/decisions.md#the-durable-step-loop): the model thinks, and when it asks for tools the turn
// acts until every call's result is committed, then thinks again; a step whose calls wait for a decision
// pauses the turn (paused-turn.ts, docs/internals/decisions.md#approvals). A session handed to people keeps its
// handoff in the context until it is handed back (docs/guides/humans.md). The host provides `operate` and the
// actions that answer waiting callers. Lasting changes come in as events only after their commit; the snapshot
// each commit stores is computed from it (session-snapshot.ts).
import { type ActorRefFrom, assign, type SnapshotFrom, setup } from 'xstate';
// A session's lifecycle status: the machine's states, and the session row's `status` column.
import type { SessionStatus } from '#schemas';
import { decided, pausedAfter, pausedMovesOn, pausedRefuses } from './paused-turn.ts';
import { isCancel, queueWithExpiry, queueWithResume, track } from './session-queue.ts';
import type {
  OperateInput,
  OperationRef,
  RejectCode,
  SessionContext,
  SessionEvent,
  SessionInput,
} from './session-types.ts';

export type * from './session-types.ts';
export type { SessionStatus };

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
    reject: (_, _params: { op: OperationRef; code: RejectCode }) => {},
    /** Answers the caller of `op` with the result of the operation `target` (same key, same request). */
    join: (_, _params: { op: OperationRef; target: string }) => {},
    /** Answers every caller of `ops` with an error (the session closed or expired under them). */
    rejectAll: (_, _params: { ops: OperationRef[]; code: RejectCode }) => {},
    dequeue: assign(({ context }) => ({
      current: context.queue[0] ?? null,
      queue: context.queue.slice(1),
      steps: 0,
      pendingCalls: 0,
    })),
    finish: assign(({ context, event }) => {
      const inflight = { ...context.inflight };
      if (context.current?.key) delete inflight[context.current.key];
      const expiresAt =
        event.type === 'DONE' && event.expiresAt !== undefined ? event.expiresAt : context.expiresAt;
      return { current: null, inflight, steps: 0, pendingCalls: 0, expiresAt };
    }),
    /** A new step's calls are committed: `pendingCalls` of them run now, and it may pause the turn. */
    stepped: assign(({ context, event }) => ({
      steps: context.steps + 1,
      pendingCalls: event.type === 'TOOLS_CALLED' ? event.calls : 0,
      ...(event.type === 'TOOLS_CALLED' && event.paused ? { paused: event.paused } : {}),
    })),
    clearOperations: assign({
      queue: [],
      current: null,
      inflight: {},
      steps: 0,
      pendingCalls: 0,
      paused: undefined,
    }),
    applyActivity: assign(({ event }) =>
      event.type === 'ACTIVITY'
        ? {
            expiresAt: event.expiresAt,
            ...(event.turnEnded ? { paused: undefined } : {}),
            ...(event.handoff ? { handoff: event.handoff } : {}),
          }
        : {},
    ),
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
    hasPaused: ({ context }) => context.paused !== undefined,
    notPaused: ({ context }) => context.paused === undefined,
    pausedRefuses,
    pausedMovesOn,
    isCancel,
    byUser: ({ event }) => event.type === 'ACTIVITY' && event.byUser,
    isCurrent: ({ context, event }) => event.type === 'DONE' && context.current?.id === event.opId,
    resumesActing: ({ event }) => event.type === 'STEPS_RESUMED' && event.pending > 0,
    callsToRun: ({ event }) => event.type === 'TOOLS_CALLED' && event.calls > 0,
    lastResult: ({ context }) => context.pendingCalls <= 1,
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
    steps: 0,
    pendingCalls: 0,
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
            guard: 'pausedRefuses',
            actions: {
              type: 'reject',
              params: ({ event }) => ({ op: event.op, code: 'approval_pending' as const }),
            },
          },
          {
            guard: 'isCancel',
            actions: assign(({ context, event }) => ({ queue: [event.op, ...context.queue] })),
          },
          {
            guard: 'queueFull',
            actions: { type: 'reject', params: ({ event }) => ({ op: event.op, code: 'session_busy' }) },
          },
          {
            // Expiry is committed by an operation of its own, ahead of everything else waiting.
            guard: 'pastExpiry',
            actions: assign(({ context, event }) => ({
              queue: queueWithExpiry(context, event.op),
              inflight: track(context, event.op),
            })),
          },
          {
            guard: 'pausedMovesOn',
            actions: assign(({ context, event }) => ({
              queue: queueWithResume(context, event.op),
              inflight: track(context, event.op),
            })),
          },
          {
            actions: assign(({ context, event }) => ({
              queue: [...context.queue, event.op],
              inflight: track(context, event.op),
            })),
          },
        ],
        ACTIVITY: { actions: 'applyActivity' },
        // Outside a running turn (the stored snapshot's stand-in): only what it pauses counts.
        TOOLS_CALLED: {
          guard: ({ event }) => event.paused !== undefined,
          actions: assign(({ context, event }) => ({ paused: pausedAfter(context, event) })),
        },
        DECIDED: {
          actions: assign(({ context, event }) => ({ paused: decided(context.paused, event.callIds) })),
        },
        TURN_ENDED: { actions: assign({ paused: undefined }) },
        HANDED_OFF: { actions: assign(({ event }) => ({ handoff: event.handoff })) },
        HANDED_BACK: { actions: assign({ handoff: undefined }) },
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
            idle: {
              always: [
                { guard: 'hasPaused', target: 'paused' },
                { guard: 'hasQueued', target: 'running', actions: 'dequeue' },
              ],
            },
            // A turn waits for decisions: only what decides, moves on, cancels or ends it is queued.
            paused: {
              always: [
                { guard: 'notPaused', target: 'idle' },
                { guard: 'hasQueued', target: 'running', actions: 'dequeue' },
              ],
            },
            running: {
              entry: {
                type: 'operate',
                params: ({ context }) => ({
                  sessionId: context.sessionId,
                  op: context.current ?? { id: 'none', kind: 'expire' },
                }),
              },
              on: { DONE: { guard: 'isCurrent', target: 'idle', actions: 'finish' } },
              initial: 'thinking',
              states: {
                thinking: {
                  on: {
                    TOOLS_CALLED: [
                      { guard: 'callsToRun', target: 'acting', actions: 'stepped' },
                      // Every call of the step was answered in the same write, or waits: nothing to run.
                      { actions: 'stepped' },
                    ],
                    STEPS_RESUMED: [
                      {
                        guard: 'resumesActing',
                        target: 'acting',
                        actions: assign(({ event }) => ({ steps: event.steps, pendingCalls: event.pending })),
                      },
                      { actions: assign(({ event }) => ({ steps: event.steps, pendingCalls: 0 })) },
                    ],
                  },
                },
                acting: {
                  on: {
                    TOOL_RESULT: [
                      { guard: 'lastResult', target: 'thinking', actions: assign({ pendingCalls: 0 }) },
                      { actions: assign(({ context }) => ({ pendingCalls: context.pendingCalls - 1 })) },
                    ],
                  },
                },
              },
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

export type SessionMachine = typeof sessionMachine;
export type SessionSnapshot = SnapshotFrom<SessionMachine>;
export type SessionActor = ActorRefFrom<SessionMachine>;

export function statusOf(snapshot: SessionSnapshot): SessionStatus {
  if (snapshot.matches('closed')) return 'closed';
  if (snapshot.matches('expired')) return 'expired';
  return 'active';
}

/**
 * Whether the running turn may still offer the model its tools: fewer than `maxSteps` tool steps are
 * committed. At `maxSteps` the model is called once more without tools
 * (docs/internals/decisions.md#the-durable-step-loop).
 */
export const mayCallTools = (snapshot: SessionSnapshot, maxSteps: number): boolean =>
  snapshot.context.steps < maxSteps;
