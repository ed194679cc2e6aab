// A turn that waits for approvals, as the session machine (session.ts) holds it: which turn, the send that
// started it, and the calls of its paused step still waiting for a decision (docs/internals/decisions.md#approvals).
// Pure, like the machine: JSON only, since it is part of every snapshot stored while the turn waits. The
// machine's guards about it are here too.
import type { Approver, PausedTurn, SessionContext, SessionEvent } from './session-types.ts';

/**
 * Whether a new turn (or an inactivity message) must wait for the paused turn at `at`: some call still waits
 * and has not expired. An expired call counts as denied, which the resume operation applies before anything.
 */
export const blocksTurns = (paused: PausedTurn | null | undefined, at: number): boolean =>
  paused?.waiting.some((call) => call.expiresAt > at) ?? false;

/** Whether the paused turn can be moved on at `at`: every call is decided, or one has expired. */
export const canMoveOn = (paused: PausedTurn | null | undefined, at: number): boolean =>
  paused != null && (paused.waiting.length === 0 || paused.waiting.some((call) => call.expiresAt <= at));

/** The ids of the waiting calls that `by` may see: the public family (`user`) sees its own calls only. */
export const waitingCallIds = (paused: PausedTurn | null | undefined, by: Approver | undefined): string[] =>
  (paused?.waiting ?? []).filter((call) => by !== 'user' || call.approver === 'user').map((call) => call.id);

/** The operation that moves a paused turn on (applies expiries, continues a decided turn), one per session. */
export const resumeOpId = (sessionId: string) => `resume_${sessionId}`;

type Guard = (args: { context: SessionContext; event: SessionEvent }) => boolean;

/** A new turn while calls wait (and have not expired): the caller is told to decide first. */
export const pausedRefuses: Guard = ({ context, event }) =>
  event.type === 'SUBMIT' &&
  (event.op.kind === 'send' || event.op.kind === 'inactivity') &&
  blocksTurns(context.paused, event.at);

/** A paused turn nobody is moving on can go on (decided, or a call expired): a resume goes first. */
export const pausedMovesOn: Guard = ({ context, event }) =>
  event.type === 'SUBMIT' &&
  context.current === null &&
  canMoveOn(context.paused, event.at) &&
  !context.queue.some((o) => o.id === resumeOpId(context.sessionId));

/** The paused turn once `callIds` are decided: they wait no more. */
export const decided = (paused: PausedTurn | undefined, callIds: readonly string[]): PausedTurn | undefined =>
  paused && { ...paused, waiting: paused.waiting.filter((call) => !callIds.includes(call.id)) };

/** The paused turn after `event`: a step that makes calls wait pauses it (TOOLS_CALLED with `paused`). */
export const pausedAfter = (context: SessionContext, event: SessionEvent): PausedTurn | undefined =>
  event.type === 'TOOLS_CALLED' && event.paused ? event.paused : context.paused;
