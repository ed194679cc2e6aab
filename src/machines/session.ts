// The session machine: pure, no I/O. It holds what one session is (active with a turn region idle/running and
// an inactivity region none/warned; final closed and expired), its queue of operations (one runs at a time)
// and the Idempotency-Keys in flight. A running send goes through steps
// (docs/internals/decisions.md#the-durable-step-loop): the model thinks, and when it asks for tools the turn
// acts until every call's result is committed, then thinks again. The host provides `operate` (starts one
// operation and sends DONE once it has finished) and the actions that answer waiting callers. Lasting changes
// come in as events only after their commit; the snapshot each commit stores is computed from it
// (session-snapshot.ts).
import { type ActorRefFrom, assign, type SnapshotFrom, setup } from 'xstate';
// A session's lifecycle status: the machine's states, and the session row's `status` column.
import type { SessionStatus } from '#schemas';

export type { SessionStatus };

export type OperationKind = 'send' | 'terminate' | 'inactivity' | 'expire';

/**
 * An operation as the machine sees it: which one, of what kind, and the Idempotency-Key and request
 * fingerprint it carries. JSON only (it is part of the snapshot while it waits); what the operation does
 * and what it answers are the host's (actors/operations.ts).
 */
export interface OperationRef {
  id: string;
  kind: OperationKind;
  key?: string;
  fingerprint?: string;
}

/** What `operate` is given: the operation, and the session it belongs to (one provided machine serves all). */
export interface OperateInput {
  sessionId: string;
  op: OperationRef;
}

export type RejectCode = 'session_busy' | 'idempotency_key_reused' | 'session_closed' | 'session_expired';

export interface SessionInput {
  sessionId: string;
  /** Epoch milliseconds after which the session counts as expired. */
  expiresAt: number;
  /** Operations that may wait behind the running one (docs/internals/decisions.md#turns: 8). */
  maxWaiting?: number;
}

export interface SessionContext {
  sessionId: string;
  expiresAt: number;
  closedAt: string | null;
  closeReason: string | null;
  maxWaiting: number;
  queue: OperationRef[];
  current: OperationRef | null;
  /** Idempotency-Key → the operation that carries it, while queued or running. */
  inflight: Record<string, { opId: string; fingerprint: string }>;
  /** Tool steps the running operation has committed (a resumed turn starts from its stored ones). */
  steps: number;
  /** Tool calls of the current step whose results are not committed yet. */
  pendingCalls: number;
}

export type SessionEvent =
  /** A caller asks for an operation; `at` is the caller's clock (epoch ms), for the expiry check. */
  | { type: 'SUBMIT'; op: OperationRef; at: number }
  /** Committed: messages were stored; `byUser` when one of them came from the user. */
  | { type: 'ACTIVITY'; expiresAt: number; byUser: boolean }
  /** Committed: the inactivity warning was stored. */
  | { type: 'WARNED' }
  /** Committed: the session was closed. */
  | { type: 'CLOSED'; closedAt: string; reason: string | null }
  /** Committed: the session expired. */
  | { type: 'EXPIRED' }
  /**
   * The operation `opId` has finished, whatever its outcome (its callers are answered). `expiresAt` is its
   * last commit's activity when that commit left it to DONE (one event per turn fewer; see fenced-commit.ts).
   */
  | { type: 'DONE'; opId: string; expiresAt?: number }
  /** Committed: the running turn's model asked for tools (a new step), `calls` of which are to run. */
  | { type: 'TOOLS_CALLED'; calls: number }
  /** Committed: one tool call's result. */
  | { type: 'TOOL_RESULT' }
  /** A retried turn resumes after `steps` committed steps, `pending` of whose calls still lack a result. */
  | { type: 'STEPS_RESUMED'; steps: number; pending: number };

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
    clearOperations: assign({ queue: [], current: null, inflight: {}, steps: 0, pendingCalls: 0 }),
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
              const expire: OperationRef[] = pending ? [] : [{ id: expireId, kind: 'expire' }];
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
              initial: 'thinking',
              states: {
                thinking: {
                  on: {
                    TOOLS_CALLED: [
                      {
                        guard: 'callsToRun',
                        target: 'acting',
                        actions: assign(({ context, event }) => ({
                          steps: context.steps + 1,
                          pendingCalls: event.calls,
                        })),
                      },
                      // Every call of the step was answered in the same write: nothing to wait for.
                      { actions: assign(({ context }) => ({ steps: context.steps + 1 })) },
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

function track(context: SessionContext, op: OperationRef): SessionContext['inflight'] {
  if (op.key === undefined || op.fingerprint === undefined) return context.inflight;
  return { ...context.inflight, [op.key]: { opId: op.id, fingerprint: op.fingerprint } };
}

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
