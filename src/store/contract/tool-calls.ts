// The Store's tool calls: each call of a turn, committed before it runs and completed by its result (both
// written by session commits: see SessionWrite), a call that waits for a person's decision and the decision
// (docs/internals/decisions.md#approvals), and the summary a model's reply shows of them.
import type { MessageUsage, NewUsage } from './common.ts';

/**
 * A tool call as an assistant message shows it (docs/internals/decisions.md#tool-calls-on-messages): what was
 * asked, what came back.
 */
export interface ToolCallSummary {
  id: string;
  name: string;
  input: unknown;
  output: unknown;
  status: 'ok' | 'error';
  duration_ms: number;
}

/**
 * A tool call of a turn in progress, committed before the tool runs; its result is committed when it
 * arrives. A step's first call (`position` 0) also keeps the text the model wrote in that step and the
 * step's usage, so that a turn resumed after a crash gives the model the same steps again.
 */
export interface ToolCallRecord {
  id: string;
  turn_id: string;
  /** The model call that asked for it, from 1. */
  step: number;
  /** Its place among the step's calls, from 0. */
  position: number;
  name: string;
  input: unknown;
  step_text: string | null;
  step_usage: MessageUsage | null;
  /**
   * Null until the result is committed (and while an approved call is still to run); `awaiting_approval`
   * while the call waits for a decision.
   */
  status: 'ok' | 'error' | 'awaiting_approval' | null;
  output: unknown;
  duration_ms: number | null;
  created_at: string;
  /** When its result was committed. */
  completed_at: string | null;
  /** Its result's place among the turn's results, in the order they were committed (and streamed), from 1. */
  completed_seq: number | null;
  /** Who must approve the call before it runs; null when nobody must. */
  approver: Approver | null;
  /** When a waiting call counts as denied (reason `expired`); null when nobody must approve it. */
  expires_at: string | null;
  decision: 'approved' | 'denied' | null;
  /** Who decided: through the public family (`user`), an API key (`operator`), or Parley (`system`). */
  decided_by: DecidedBy | null;
  decision_reason: string | null;
  decided_at: string | null;
}

/** Who may decide a waiting call: its end user or the integrator (`user`), or only the integrator. */
export type Approver = 'user' | 'operator';
/** Who decided a call: a person of either family, or Parley itself (an expiry, a cancel, a close). */
export type DecidedBy = Approver | 'system';

export type NewToolCall = Omit<
  ToolCallRecord,
  | 'status'
  | 'output'
  | 'duration_ms'
  | 'created_at'
  | 'completed_at'
  | 'completed_seq'
  | 'approver'
  | 'expires_at'
  | 'decision'
  | 'decided_by'
  | 'decision_reason'
  | 'decided_at'
  | 'step_usage'
> & {
  step_usage: NewUsage | null;
  /** Set when the call must wait for a decision: it is committed `awaiting_approval`, and never run before. */
  approval?: { approver: Approver; expires_at: string };
};

/**
 * A decision on a waiting call. An approved call goes back to no status (to be run); a denied one is completed
 * with `output` as its error result, in the order of the turn's results; an approved one with `output` (a
 * call to a function the client declared, given the client's output) is completed with it as its result.
 */
export interface ToolCallDecision {
  id: string;
  turn_id: string;
  decision: 'approved' | 'denied';
  by: DecidedBy;
  reason: string | null;
  /** The error result a denied call gives the model, or the output a client's function call gives it. */
  output?: unknown;
  /** The call's tool, for the session's event log (not written: the call has it). */
  name?: string;
}

/**
 * A decision for a call that was not waiting (decided already, or never asked): the write it was part of is
 * undone whole, so that of two decisions on one call exactly one is applied.
 */
export class ApprovalConflictError extends Error {
  override name = 'ApprovalConflictError';
  readonly callId: string;
  constructor(callId: string) {
    super(`Tool call ${callId} is not awaiting approval; the write was undone`);
    this.callId = callId;
  }
}

export interface ToolCallResult {
  id: string;
  turn_id: string;
  /** The call's tool, for the session's event log (not written: the call has it). */
  name?: string;
  status: 'ok' | 'error';
  output: unknown;
  duration_ms: number;
}

export interface ToolCallStore {
  /** The tool calls a turn committed, by step and position, with their results where committed. */
  turnToolCalls(sessionId: string, turnId: string): Promise<ToolCallRecord[]>;
  /**
   * The calls of these sessions that wait for a decision, by session, turn, step and position (a session
   * without any is left out).
   */
  awaitingApproval(sessionIds: readonly string[]): Promise<(ToolCallRecord & { session_id: string })[]>;
}
