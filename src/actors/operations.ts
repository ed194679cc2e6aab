// The operations a session runs, one at a time in its actor, as one tagged union: each kind with its payload,
// its result and the function that runs it. The host's `submit` and the runner are typed from this table, so
// a caller gets its kind's result. Terminate and expiry are small enough to live here; a turn is turn.ts, an
// inactivity step inactivity.ts, a decision approvals.ts, a paused turn going on turn-continue.ts, a
// cancel cancel.ts and a handoff handoff.ts; a change of metadata is one commit.
import type { OperationKind, SessionSnapshot } from '../machines/session.ts';
import type { JsonObject } from '../store/store.ts';
import { type DecidePayload, type DecideResult, runDecide } from './approvals.ts';
import { type CancelPayload, type CancelResult, endPaused, runCancel } from './cancel.ts';
import { type HandoffPayload, type HandoffResult, runHandoff } from './handoff.ts';
import { type InactivityPayload, type InactivityResult, runInactivity } from './inactivity.ts';
import type { OperationContext, OperationDeps, OperationOf } from './operation-context.ts';
import { closed, expired } from './session-changes.ts';
import { runTurn, type SendPayload, type TurnResult } from './turn.ts';
import { type ResumePayload, runResume } from './turn-continue.ts';

export interface TerminatePayload {
  reason: string | null;
}

export interface TerminateResult {
  id: string;
  status: 'closed';
  closed_at: string;
  reason: string | null;
}

/** Every kind of operation (the machine's OperationKind), with its payload and result. */
export interface OperationTypes {
  send: { payload: SendPayload; result: TurnResult };
  inactivity: { payload: InactivityPayload; result: InactivityResult };
  terminate: { payload: TerminatePayload; result: TerminateResult };
  expire: { payload: null; result: null };
  decide: { payload: DecidePayload; result: DecideResult };
  resume: { payload: ResumePayload; result: TurnResult | null };
  cancel: { payload: CancelPayload; result: CancelResult };
  handoff: { payload: HandoffPayload; result: HandoffResult };
  metadata: { payload: { metadata: JsonObject }; result: null };
}

/** An operation of kind `K` (of any kind by default): the tagged union. */
export type Operation<K extends OperationKind = OperationKind> = {
  [P in K]: OperationOf<OperationTypes[P]['payload']> & { kind: P };
}[K];

export type ResultOf<K extends OperationKind> = OperationTypes[K]['result'];

/** Runs one operation of a session and returns its caller's answer. */
export type OperationRunner = <K extends OperationKind>(
  context: OperationContext,
  op: Operation<K>,
) => Promise<ResultOf<K>>;

type Runners = {
  [K in OperationKind]: (context: OperationContext, op: Operation<K>) => Promise<ResultOf<K>>;
};

export function createOperationRunner(deps: OperationDeps): OperationRunner {
  const runners: Runners = {
    send: (context, op) => runTurn(deps, context, op),
    inactivity: (context, op) => runInactivity(deps, context, op),
    terminate,
    decide: (context, op) => runDecide(deps, context, op),
    resume: (context, op) => runResume(deps, context, op),
    cancel: (context, op) => runCancel(deps, context, op),
    handoff: runHandoff,
    // Replaced in the row (and the resident record), committed like any change of the session.
    metadata: async (context, op) => {
      await context.commit({ patch: { metadata: op.payload.metadata } });
      return null;
    },
    expire: async (context) => {
      // A turn that ran while this waited may have moved the lifetime on (a model that wrote for longer than
      // the session's lifetime: the sweep found it due from the turn's first message).
      if (Date.now() < context.entry.actor.getSnapshot().context.expiresAt) return null;
      await endPausedTurn(deps, context);
      await context.commit(expired());
      return null;
    },
  };
  async function terminate(context: OperationContext, op: Operation<'terminate'>): Promise<TerminateResult> {
    await endPausedTurn(deps, context);
    const { reason } = op.payload;
    const closedAt = new Date().toISOString();
    await context.commit(closed(closedAt, reason));
    return { id: context.entry.session.id, status: 'closed', closed_at: closedAt, reason };
  }
  return <K extends OperationKind>(context: OperationContext, op: Operation<K>) => {
    const run: (context: OperationContext, op: Operation<K>) => Promise<ResultOf<K>> = runners[op.kind];
    return run(context, op);
  };
}

/** A session that closes or expires ends its paused turn first: what it waits for is denied. */
async function endPausedTurn(deps: OperationDeps, context: OperationContext): Promise<void> {
  const paused = context.entry.actor.getSnapshot().context.paused ?? null;
  if (paused) await endPaused(deps, context, paused, 'closed');
}

/** What terminating a session that is closed already answers: its first closing; null while it is open. */
export function closedAnswer(sessionId: string, snapshot: SessionSnapshot): TerminateResult | null {
  if (!snapshot.matches('closed')) return null;
  return {
    id: sessionId,
    status: 'closed',
    closed_at: snapshot.context.closedAt ?? '',
    reason: snapshot.context.closeReason,
  };
}
