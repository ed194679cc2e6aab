// Who waits on which operation, and answering them: with the operation's result, with the result of the
// operation a duplicate joined (same Idempotency-Key, same request), or with an error (the machine's own
// answers are provided here too). An answer that rests on the actor's memory alone (the machine's refusals,
// an operation that wrote nothing) waits until the store confirms this process still owns the session. A
// streamed turn's observer stays with its call until the turn ends. Calls are kept by kind so that each waiter
// gets its kind's result type.
import type { AnyActorRef } from 'xstate';
import { AppError, approvalPending } from '../errors.ts';
import { waitingCallIds } from '../machines/paused-turn.ts';
import {
  type OperateInput,
  type OperationKind,
  type OperationRef,
  type SessionMachine,
  type SessionStatus,
  sessionMachine,
} from '../machines/session.ts';
import { captureTraceContext } from '../tracing/tracer.ts';
import type { TurnObserver } from './operation-context.ts';
import type { Operation, ResultOf } from './operations.ts';

interface Waiter<R> {
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

interface Call<K extends OperationKind> {
  readonly op: Operation<K>;
  readonly observer: TurnObserver | undefined;
  readonly waiters: Waiter<ResultOf<K>>[];
  /** The caller's trace context: the operation runs in it, whenever the actor starts it. */
  readonly trace?: unknown;
}

type CallsByKind = { [K in OperationKind]: Map<string, Call<K>> };

/** How an operation ended: its result, or the error its callers get. */
export type Outcome<R> = { value: R } | { error: unknown };

function answer<R>(waiters: readonly Waiter<R>[], outcome: Outcome<R>): void {
  for (const waiter of waiters) {
    if ('value' in outcome) waiter.resolve(outcome.value);
    else waiter.reject(outcome.error);
  }
}

export class Calls {
  /** Resolves while this process still owns the session; rejects with the error to answer instead. */
  readonly #confirm: (sessionId: string) => Promise<void>;

  constructor(confirm: (sessionId: string) => Promise<void>) {
    this.#confirm = confirm;
  }

  readonly #byKind: CallsByKind = {
    send: new Map(),
    inactivity: new Map(),
    terminate: new Map(),
    expire: new Map(),
    decide: new Map(),
    resume: new Map(),
    cancel: new Map(),
    handoff: new Map(),
    metadata: new Map(),
  };

  /** Waits for the answer to `op`; a second call with the same id (an expiry) waits for the same answer. */
  open<K extends OperationKind>(op: Operation<K>, observer?: TurnObserver): Promise<ResultOf<K>> {
    const calls: Map<string, Call<K>> = this.#byKind[op.kind];
    return new Promise((resolve, reject) => {
      const call = calls.get(op.id);
      if (call) call.waiters.push({ resolve, reject });
      else calls.set(op.id, { op, observer, waiters: [{ resolve, reject }], trace: captureTraceContext() });
    });
  }

  /**
   * The call of an operation the machine starts. An expiry or a resume it queued by itself has no caller: it
   * gets one.
   */
  get<K extends OperationKind>(ref: { id: string; kind: K }): Call<K> | undefined {
    if (ref.kind === 'expire' && !this.#byKind.expire.has(ref.id)) {
      const op = { id: ref.id, kind: 'expire' as const, payload: null };
      this.#byKind.expire.set(ref.id, { op, observer: undefined, waiters: [] });
    }
    if (ref.kind === 'resume' && !this.#byKind.resume.has(ref.id)) {
      const op = { id: ref.id, kind: 'resume' as const, payload: null };
      this.#byKind.resume.set(ref.id, { op, observer: undefined, waiters: [] });
    }
    const calls: Map<string, Call<K>> = this.#byKind[ref.kind];
    return calls.get(ref.id);
  }

  reject(ref: OperationRef, error: unknown): void {
    this.settle(ref, { error });
  }

  /**
   * Answers the callers of `ref` with `outcome`. With `confirmFor` (the session's id) the answer rests on the
   * actor's memory alone, and is given only once the store confirms this process still owns the session;
   * otherwise they get shard_moving. The call is closed at once either way: only its answer waits.
   */
  settle<K extends OperationKind>(
    ref: { id: string; kind: K },
    outcome: Outcome<ResultOf<K>>,
    confirmFor?: string,
  ): void {
    const calls: Map<string, Call<K>> = this.#byKind[ref.kind];
    const waiters = calls.get(ref.id)?.waiters ?? [];
    calls.delete(ref.id);
    if (waiters.length === 0) return;
    if (confirmFor === undefined) {
      answer(waiters, outcome);
      return;
    }
    this.#confirm(confirmFor).then(
      () => answer(waiters, outcome),
      (error: unknown) => answer(waiters, { error }),
    );
  }

  /**
   * `ref` repeats the send `target`, queued or running (same key, same request): its callers get the first
   * attempt's answer, not its events. Only sends carry keys.
   */
  join(ref: OperationRef, target: string): void {
    const joining = this.#byKind.send.get(ref.id);
    this.#byKind.send.delete(ref.id);
    const joined = this.#byKind.send.get(target);
    if (!joining) return;
    if (joined) joined.waiters.push(...joining.waiters);
    else for (const waiter of joining.waiters) waiter.reject(new Error(`Joined ${target}, which is gone`));
  }
}

export const statusError = (status: SessionStatus, sessionId: string) =>
  new AppError(status === 'closed' ? 'session_closed' : 'session_expired', undefined, {
    context: { session_id: sessionId },
  });

/**
 * The machine with the host's side effects: `operate` runs operations, and the machine's refusals answer the
 * callers of `calls`, once confirmed (they are decided from memory, nothing written). One for all sessions
 * (providing is costly); an operation finds its session's entry by id.
 */
export function answeringMachine(
  calls: Calls,
  operate: (args: { self: AnyActorRef }, input: OperateInput) => void,
): SessionMachine {
  return sessionMachine.provide({
    actions: {
      operate,
      reject: ({ context }, { op, code }) =>
        calls.settle(
          op,
          {
            error:
              code === 'approval_pending'
                ? approvalPending(context.paused?.turnId ?? '', waitingCallIds(context.paused, op.by))
                : new AppError(code, undefined, {
                    context: { session_id: context.sessionId },
                    ...(code === 'session_busy' ? { headers: { 'retry-after': '1' } } : {}),
                  }),
          },
          context.sessionId,
        ),
      join: (_, { op, target }) => calls.join(op, target),
      // After a committed CLOSED or EXPIRED: a final status, written under this process's fence.
      rejectAll: ({ context }, { ops, code }) => {
        const status = code === 'session_closed' ? 'closed' : 'expired';
        for (const op of ops) calls.reject(op, statusError(status, context.sessionId));
      },
    },
  });
}
