// A paused turn going on (docs/internals/decisions.md#approvals): the resume operation applies the denials of
// calls whose time ran out and, once every call of the paused step is decided, continues the turn from what is
// committed (the decision operation does the same after committing its decisions). It runs after a decision,
// after a restart or an ownership move (the new owner finds the paused turn in the snapshot), from the sweep,
// and for a keyed retry of the send that started the turn; none of these runs a stored call twice.
import { AppError } from '../errors.ts';
import type { PausedTurn } from '../machines/session.ts';
import type { ToolCallRecord } from '../store/store.ts';
import { agentOf, type OperationContext, type OperationDeps, type OperationOf } from './operation-context.ts';
import { publicMessage } from './public-message.ts';
import { functionNames, markFunctions, systemDenials, waitingApprovals, wakeAt } from './step-approvals.ts';
import { runSteps, type StepsOutcome } from './tool-steps.ts';
import type { TurnResult } from './turn.ts';
import { commitReply, countTurn, reportFailure, turnPrompt } from './turn-end.ts';
import { firstTokenTimed, modelCaller } from './turn-model.ts';

/** A resume names the turn its caller expects (a keyed retry of its send); null moves on whatever is paused. */
export type ResumePayload = { turnId: string } | null;

/**
 * Moves the session's paused turn on as far as it can go now, and answers like its send would: the reply
 * (201), or the approvals it still waits for (202). Null when no turn (or not the expected one) is paused.
 */
export async function runResume(
  deps: OperationDeps,
  context: OperationContext,
  op: OperationOf<ResumePayload>,
): Promise<TurnResult | null> {
  const paused = context.entry.actor.getSnapshot().context.paused ?? null;
  if (!paused || (op.payload && op.payload.turnId !== paused.turnId)) return null;
  const calls = await expireDue(deps, context, paused);
  return moveOn(deps, context, paused, calls);
}

/**
 * Denies (reason `expired`) the calls of the paused turn whose time ran out, in one commit; the turn's calls
 * as they are then.
 */
export async function expireDue(
  deps: OperationDeps,
  context: OperationContext,
  paused: PausedTurn,
): Promise<ToolCallRecord[]> {
  const { session } = context.entry;
  const calls = await deps.store.turnToolCalls(session.id, paused.turnId);
  const now = new Date().toISOString();
  const due = waitingApprovals(calls).filter((a) => a.expires_at <= now);
  if (due.length === 0) return calls;
  const left = waitingApprovals(calls).filter((a) => a.expires_at > now);
  await context.commit({
    decisions: systemDenials(paused.turnId, due, 'expired'),
    patch: { wake_at: wakeAt(left) },
    event: { type: 'DECIDED', callIds: due.map((a) => a.call_id) },
  });
  return deps.store.turnToolCalls(session.id, paused.turnId);
}

/** The paused turn's answer while calls wait; once none waits, the turn goes on and answers with its end. */
export async function moveOn(
  deps: OperationDeps,
  context: OperationContext,
  paused: PausedTurn,
  calls: readonly ToolCallRecord[],
): Promise<TurnResult> {
  const approvals = waitingApprovals(calls);
  if (approvals.length > 0) {
    const marked = markFunctions(approvals, functionNames(paused.extras));
    return { turn_id: paused.turnId, agent_message: null, approvals: marked, usage: null, replayed: false };
  }
  return continueTurn(deps, context, paused);
}

/** Continues the paused turn, all of whose waiting calls are decided, from what is committed. */
async function continueTurn(
  deps: OperationDeps,
  context: OperationContext,
  paused: PausedTurn,
): Promise<TurnResult> {
  const { session } = context.entry;
  const { agent, provider } = agentOf(deps, session.agent_id);
  const started = performance.now();
  const { turnId, replyId, key, extras } = paused;
  context.runsTurn(turnId);
  const continued = context.observer?.continued;
  if (continued) await continued.call(context.observer, turnId, replyId);
  let outcome: StepsOutcome;
  try {
    const system = await turnPrompt(deps, context, agent, extras);
    const ask = firstTokenTimed(
      deps,
      agent,
      started,
      await modelCaller(deps, context, agent, provider, system),
    );
    const resumed = await deps.store.turnToolCalls(session.id, turnId);
    outcome = await runSteps(deps, context, {
      agent,
      turnId,
      ask,
      resumed,
      pause: { replyId, key, extras },
      retell: !continued,
    });
  } catch (err) {
    countTurn(deps, agent, err instanceof AppError ? err.code : 'error');
    await reportFailure(deps, context, { turnId, endsPaused: true }, err);
    throw err;
  }
  if ('paused' in outcome) {
    countTurn(deps, agent, 'paused');
    return {
      turn_id: turnId,
      agent_message: null,
      approvals: outcome.paused.approvals,
      usage: null,
      replayed: false,
    };
  }
  const message = await commitReply(deps, context, {
    agent,
    turnId,
    replyId,
    key,
    reply: outcome.reply,
    endsPaused: true,
    started,
  });
  return {
    turn_id: turnId,
    agent_message: message,
    approvals: null,
    usage: outcome.reply.usage,
    replayed: false,
  };
}

/**
 * A turn that is not paused, as it is in the store: its reply (replayed), or, without one, 503
 * turn_interrupted (it failed going on; a keyed retry of its send may finish it).
 */
export async function storedAnswer(
  deps: OperationDeps,
  sessionId: string,
  turnId: string,
): Promise<TurnResult> {
  const reply = (await deps.store.turnMessages(sessionId, turnId)).findLast((m) => m.stop_reason !== null);
  if (!reply) throw new AppError('turn_interrupted', undefined, { context: { turn_id: turnId } });
  return {
    turn_id: turnId,
    agent_message: publicMessage(reply),
    approvals: null,
    usage: null,
    replayed: true,
  };
}
