// What a turn's steps do about approvals (docs/internals/decisions.md#approvals): which of a step's calls
// must wait for a decision and until when, how a waiting call is shown (an Approval), the paused turn the
// machine keeps, and the denials Parley decides itself (an expired call, a cancelled or closed turn).
import type { AgentConfig } from '../agents/catalogue.ts';
import { approverOf } from '../agents/catalogue-tools.ts';
import type { Approver, PausedTurn, TurnExtras } from '../machines/session.ts';
import type { DecidedBy, NewToolCall, ToolCallDecision, ToolCallRecord } from '../store/store.ts';

/** A step's call as committed: a new one, or an earlier operation's with its result, if it has one. */
export type StepCall = ToolCallRecord | NewToolCall;

/** A call waiting for a decision, as answers, events and the Session record show it. */
export interface Approval {
  call_id: string;
  /** The turn that waits: what a decision names (POST …/turns/{turn_id}/approvals). */
  turn_id: string;
  tool: string;
  input: unknown;
  approver: Approver;
  requested_at: string;
  expires_at: string;
  /**
   * Set on a call to a function the client declared (an Open Responses request's `tools`): what it waits
   * for is the client's output, not a decision.
   */
  function?: true;
}

/** Why Parley itself denies a call: its time ran out, or its turn was cancelled or its session closed. */
export type SystemReason = 'expired' | 'cancelled' | 'closed';

/**
 * The step's calls as committed at `at`: each that its tool says must be approved waits until the agent's
 * `approval_timeout_seconds` from now, and so does each call to a function the client declared (`functions`):
 * it waits for the client's output, which the API-key family sends (approver `operator`). A call refused for
 * its input never waits: it never runs.
 */
export function awaitingWhereNeeded(
  agent: AgentConfig,
  calls: readonly NewToolCall[],
  refused: ReadonlySet<string>,
  at: string,
  functions: ReadonlySet<string> = new Set(),
): NewToolCall[] {
  const expires_at = new Date(Date.parse(at) + agent.approval_timeout_seconds * 1000).toISOString();
  return calls.map((call) => {
    const approver = refused.has(call.id)
      ? null
      : functions.has(call.name)
        ? 'operator'
        : approverOf(agent, call.name);
    return approver ? { ...call, approval: { approver, expires_at } } : call;
  });
}

/** The Approval of a call committed to wait (a new one at `at`, or a stored one). */
export function approvalOf(call: NewToolCall | ToolCallRecord, at?: string): Approval | null {
  const approval =
    'approval' in call && call.approval
      ? call.approval
      : 'approver' in call && call.approver && call.expires_at
        ? { approver: call.approver, expires_at: call.expires_at }
        : null;
  if (!approval) return null;
  const requested_at = 'created_at' in call ? call.created_at : (at ?? '');
  return {
    call_id: call.id,
    turn_id: call.turn_id,
    tool: call.name,
    input: call.input,
    approver: approval.approver,
    requested_at,
    expires_at: approval.expires_at,
  };
}

/** The Approvals of the stored calls that still wait, in their order. */
export const waitingApprovals = (calls: readonly ToolCallRecord[]): Approval[] =>
  calls.flatMap((c) => (c.status === 'awaiting_approval' ? (approvalOf(c) ?? []) : []));

/** What the machine keeps of a turn paused on `approvals`. */
export const pausedTurnOf = (
  turn: { turnId: string; replyId: string; key: string | null; extras?: TurnExtras | undefined },
  approvals: readonly Approval[],
): PausedTurn => ({
  turnId: turn.turnId,
  replyId: turn.replyId,
  key: turn.key,
  ...(turn.extras ? { extras: turn.extras } : {}),
  waiting: approvals.map((a) => ({
    id: a.call_id,
    approver: a.approver,
    expiresAt: Date.parse(a.expires_at),
  })),
});

/** When the owner must look at the paused turn unasked: its first expiry; now once nothing waits. */
export const wakeAt = (approvals: readonly Pick<Approval, 'expires_at'>[], now = new Date().toISOString()) =>
  approvals
    .map((a) => a.expires_at)
    .reduce((first, at) => (at < first ? at : first), approvals[0]?.expires_at ?? now);

/**
 * The error result a denied call gives the model. A person's denial says which family decided; Parley's own
 * says whose decision did not come (the call's approver), with the reason.
 */
export const denialOutput = (by: DecidedBy, approver: Approver, reason: string | null) => ({
  error: 'denied',
  by: by === 'system' ? approver : by,
  reason,
});

/** Parley's denial of each of the `approvals` of turn `turnId`, for `reason`. */
export const systemDenials = (
  turnId: string,
  approvals: readonly Approval[],
  reason: SystemReason,
): ToolCallDecision[] =>
  approvals.map((a) => ({
    id: a.call_id,
    turn_id: turnId,
    name: a.tool,
    decision: 'denied' as const,
    by: 'system' as const,
    reason,
    output: denialOutput('system', a.approver, reason),
  }));

/** The error result of a call a cancelled turn never sent. */
export const cancelledOutput = {
  error: 'cancelled',
  message: 'The turn was cancelled before this call was made.',
};

/** A stored call with its result. */
export const hasResult = (c: StepCall) => 'status' in c && (c.status === 'ok' || c.status === 'error');

/** The names of the functions the client declared for a turn. */
export const functionNames = (extras: TurnExtras | undefined): ReadonlySet<string> =>
  new Set((extras?.functions ?? []).map((f) => f.name));

/** `approvals` with those that wait for a client's function output marked so. */
export const markFunctions = (approvals: readonly Approval[], names: ReadonlySet<string>): Approval[] =>
  approvals.map((a) => (names.has(a.tool) ? { ...a, function: true as const } : a));

/** A call that waits for its decision: a new one committed so, or a stored one still waiting. */
export const isWaiting = (c: StepCall): boolean =>
  'status' in c ? c.status === 'awaiting_approval' : c.approval !== undefined;

/**
 * The calls of a step that may run (or have run): not those that wait, nor, while any of the step's calls
 * waits, those approved already (a step goes on only once every call of it is decided).
 */
export function runnable<C extends StepCall>(calls: readonly C[]): C[] {
  const waits = calls.some(isWaiting);
  return calls.filter((c) => !isWaiting(c) && !(waits && 'decision' in c && c.decision === 'approved'));
}
