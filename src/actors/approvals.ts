// The decision operation (docs/internals/decisions.md#approvals): decisions on the calls a paused turn waits
// for, committed (fenced) before anything runs. Each is bound to its session, turn and call: a call that is not
// waiting (unknown, of another turn, decided otherwise, expired) is 409 approval_not_pending, an `operator` call
// decided through the public family 403 approval_forbidden, and then nothing is applied. The same decision
// again is no error. Once every call of the step is decided, the turn goes on in this operation
// (turn-continue.ts), and its caller is answered like a send.
import { AppError } from '../errors.ts';
import type { Approver } from '../machines/session.ts';
import type { ToolCallDecision, ToolCallRecord } from '../store/store.ts';
import type { OperationContext, OperationDeps, OperationOf } from './operation-context.ts';
import { denialOutput, functionNames, waitingApprovals, wakeAt } from './step-approvals.ts';
import type { TurnResult } from './turn.ts';
import { expireDue, moveOn, storedAnswer } from './turn-continue.ts';

export interface Decision {
  call_id: string;
  approved: boolean;
  reason: string | null;
  /**
   * The output of a call to a function the client declared (an Open Responses `function_call_output`): the
   * call is completed with it. Only such a call takes one, and it takes nothing else.
   */
  output?: unknown;
}

export interface DecidePayload {
  turnId: string;
  /** Who decides: the end user (the public family) or the integrator (an API key). */
  by: Approver;
  decisions: Decision[];
}

/** The turn's answer, and the step whose calls were decided (a stream of the answer starts after its pause). */
export type DecideResult = TurnResult & { step: number };

export async function runDecide(
  deps: OperationDeps,
  context: OperationContext,
  op: OperationOf<DecidePayload>,
): Promise<DecideResult> {
  const { turnId, by, decisions } = op.payload;
  const { session } = context.entry;
  const paused = context.entry.actor.getSnapshot().context.paused ?? null;
  const ofTurn = paused?.turnId === turnId ? paused : null;
  // Calls whose time ran out are denied first: a decision for one of them comes too late.
  const calls = ofTurn
    ? await expireDue(deps, context, ofTurn)
    : await deps.store.turnToolCalls(session.id, turnId);
  const byId = new Map(calls.map((c) => [c.id, c]));
  const functions = functionNames(ofTurn?.extras);
  const apply: ToolCallDecision[] = [];
  for (const d of decisions) {
    const call = byId.get(d.call_id);
    const state = stateOf(call, d, by, call ? functions.has(call.name) : false);
    if (state === 'forbidden') {
      throw new AppError('approval_forbidden', undefined, {
        context: { turn_id: turnId, call_id: d.call_id },
      });
    }
    if (state !== 'waiting' && state !== 'repeated') {
      throw new AppError('approval_not_pending', refusals[state], {
        context: { turn_id: turnId, call_id: d.call_id, state },
      });
    }
    if (state === 'waiting' && call?.approver) {
      apply.push({
        id: d.call_id,
        turn_id: turnId,
        name: call.name,
        decision: d.approved ? 'approved' : 'denied',
        by,
        reason: d.reason,
        ...(d.approved
          ? d.output === undefined
            ? {}
            : { output: d.output }
          : { output: denialOutput(by, call.approver, d.reason) }),
      });
    }
  }
  const step = byId.get(decisions[0]?.call_id ?? '')?.step ?? 0;
  if (apply.length > 0 && ofTurn) {
    const decided = new Set(apply.map((d) => d.id));
    const left = waitingApprovals(calls).filter((a) => !decided.has(a.call_id));
    await context.commit({
      decisions: apply,
      // Every call decided: the turn goes on now, and the sweep finds it if its process dies before it did.
      patch: { wake_at: wakeAt(left) },
      event: { type: 'DECIDED', callIds: [...decided] },
    });
  }
  if (!ofTurn) return { ...(await storedAnswer(deps, session.id, turnId)), step };
  const now = await deps.store.turnToolCalls(session.id, turnId);
  const current = context.entry.actor.getSnapshot().context.paused ?? ofTurn;
  return { ...(await moveOn(deps, context, current, now)), step };
}

/** Why a decision on a call in `state` is refused, where the catalogue's message says too little. */
const refusals: Partial<Record<CallState, string>> = {
  decided: 'This tool call is not waiting: it was decided, or given its output, already.',
  not_a_function:
    'This tool call is not a call to a function the request declared: approve or deny it instead.',
  awaits_output: "This call to a client's function waits for its output, not an approval.",
  expired: 'This tool call is not waiting: its time ran out, and it was denied.',
};

type CallState =
  | 'waiting'
  | 'repeated'
  | 'forbidden'
  | 'unknown'
  | 'decided'
  | 'expired'
  | 'not_asked'
  | 'not_a_function'
  | 'awaits_output';

/**
 * Where `d` stands against the stored call: to apply, a repeat of the decision taken, or refused (why). A call
 * to a client's function (`isFunction`) takes its output once: a second output for it is refused, never
 * applied again; an approval without output would leave Parley nothing to run, so it is refused too.
 */
function stateOf(
  call: ToolCallRecord | undefined,
  d: Decision,
  by: Approver,
  isFunction: boolean,
): CallState {
  if (!call) return 'unknown';
  if (!call.approver) return 'not_asked';
  if (by === 'user' && call.approver === 'operator') return 'forbidden';
  const expired = call.decided_by === 'system' && call.decision_reason === 'expired';
  if (d.output !== undefined && call.status !== 'awaiting_approval') return expired ? 'expired' : 'decided';
  if (d.output !== undefined && !isFunction) return 'not_a_function';
  if (isFunction && d.approved && d.output === undefined) return 'awaits_output';
  if (call.status === 'awaiting_approval') return 'waiting';
  const same =
    call.decided_by === by &&
    call.decision === (d.approved ? 'approved' : 'denied') &&
    (call.decision_reason ?? null) === d.reason;
  if (same) return 'repeated';
  return expired ? 'expired' : 'decided';
}
