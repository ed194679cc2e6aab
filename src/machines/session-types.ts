// What the session machine (session.ts) is made of, as types: its operations, input, context and events.
// Pure: the context is JSON, stored with every snapshot.

/** Who may decide a waiting call: its end user or the integrator (`user`), or only the integrator. */
export type Approver = 'user' | 'operator';

/** A call of the paused step that waits for its decision, and when it counts as denied. */
export interface WaitingCall {
  id: string;
  approver: Approver;
  /** Epoch milliseconds. */
  expiresAt: number;
}

export interface PausedTurn {
  turnId: string;
  /** The id the turn's reply will have. */
  replyId: string;
  /** The Idempotency-Key of the send that started the turn, whose answer its end stores; null without. */
  key: string | null;
  /** The calls still waiting; none once every call of the step is decided (the turn may then go on). */
  waiting: WaitingCall[];
  /**
   * What the request that started the turn added to it (an Open Responses request's `tools` and
   * `instructions`), kept so that the turn goes on with them after a restart; absent for most turns.
   */
  extras?: TurnExtras;
}

/**
 * A turn's additions to its agent, from the request that started it: functions the client declared (the
 * model may call them; the client runs them and sends their output back) and instructions added to the
 * agent's own. JSON only, like the rest of a snapshot.
 */
export interface TurnExtras {
  functions?: ClientFunction[];
  instructions?: string;
}

/** A function the client declared: the model sees it like a tool, and a call to it waits for its output. */
export interface ClientFunction {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/**
 * People handle the session (docs/guides/humans.md): since when, why, and who asked for them. Stored as the
 * session row's `handoff` column shows it.
 */
export interface Handoff {
  requested_at: string;
  reason: string | null;
  by: 'agent' | 'integrator' | 'user';
}

/**
 * `decide` takes decisions on a paused turn's calls, `resume` moves a paused turn on (expired calls denied, a
 * decided turn continued), `cancel` ends a running or paused turn, `handoff` hands the session to people or
 * back to the agent, `metadata` replaces the session's metadata.
 */
export type OperationKind =
  | 'send'
  | 'terminate'
  | 'inactivity'
  | 'expire'
  | 'decide'
  | 'resume'
  | 'cancel'
  | 'handoff'
  | 'metadata';

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
  /** Through which family a send came (the public one, `user`, is told only of its own waiting calls). */
  by?: Approver;
}

/** What `operate` is given: the operation, and the session it belongs to (one provided machine serves all). */
export interface OperateInput {
  sessionId: string;
  op: OperationRef;
}

export type RejectCode =
  | 'session_busy'
  | 'idempotency_key_reused'
  | 'session_closed'
  | 'session_expired'
  | 'approval_pending';

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
  /**
   * The turn waiting for approvals (or, all decided, to go on); absent when no turn is paused, so that the
   * snapshot of every other session stores nothing of it.
   */
  paused?: PausedTurn | undefined;
  /** People handle the session since this handoff; absent while the agent does (most sessions store nothing). */
  handoff?: Handoff | undefined;
}

export type SessionEvent =
  /** A caller asks for an operation; `at` is the caller's clock (epoch ms), for the expiry check. */
  | { type: 'SUBMIT'; op: OperationRef; at: number }
  /**
   * Committed: messages were stored; `byUser` when one of them came from the user; `handoff` when the agent's
   * reply hands the session to people (its handoff_to_human tool).
   */
  | { type: 'ACTIVITY'; expiresAt: number; byUser: boolean; turnEnded?: boolean; handoff?: Handoff }
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
  /**
   * Committed: the running turn's model asked for tools (a new step), `calls` of which are to run; `paused`
   * when some of them wait for decisions (the turn pauses once the others have their results).
   */
  | { type: 'TOOLS_CALLED'; calls: number; paused?: PausedTurn }
  /** Committed: one tool call's result. */
  | { type: 'TOOL_RESULT' }
  /** A retried turn resumes after `steps` committed steps, `pending` of whose calls still lack a result. */
  | { type: 'STEPS_RESUMED'; steps: number; pending: number }
  /** Committed: these calls of the paused turn were decided (or expired). */
  | { type: 'DECIDED'; callIds: string[] }
  /** Committed: the paused turn ended without a reply of its own commit (it failed going on). */
  | { type: 'TURN_ENDED' }
  /** Committed: people handle the session from now on. */
  | { type: 'HANDED_OFF'; handoff: Handoff }
  /** Committed: the agent handles the session again. */
  | { type: 'HANDED_BACK' };
