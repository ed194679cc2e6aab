// The cancel operation (docs/internals/decisions.md#cancel): it runs ahead of everything waiting, after the
// host aborted the turn it names if that turn was running (which then stored what it had written as its reply,
// stop_reason `cancelled`). A paused turn is ended here: its waiting calls are denied, calls it never sent are
// given a cancelled result, and the text of its steps is its reply, all in one commit (terminate and expiry
// end a paused turn the same way). Any other turn is answered as it is; cancelling a finished turn changes
// nothing.
import { addUsage, noUsage } from '../agents/pricing.ts';
import { AppError } from '../errors.ts';
import type { PausedTurn } from '../machines/session.ts';
import type { Store, ToolCallRecord, ToolCallSummary } from '../store/store.ts';
import { agentOf, type OperationContext, type OperationDeps, type OperationOf } from './operation-context.ts';
import { type PublicMessage, publicMessage } from './public-message.ts';
import { cancelledOutput, type SystemReason, systemDenials, waitingApprovals } from './step-approvals.ts';
import { commitReply } from './turn-end.ts';

export interface CancelPayload {
  turnId: string;
}

/** A turn as a cancel answers it: its reply, and whether it was cancelled, replied, or ended without a reply. */
export interface CancelResult {
  turn_id: string;
  status: 'completed' | 'cancelled' | 'interrupted';
  agent_message: PublicMessage | null;
}

/** Between the texts of two steps, as the step loop writes them. */
const STEP_SEPARATOR = '\n\n';

export async function runCancel(
  deps: OperationDeps,
  context: OperationContext,
  op: OperationOf<CancelPayload>,
): Promise<CancelResult> {
  const { turnId } = op.payload;
  const paused = context.entry.actor.getSnapshot().context.paused ?? null;
  if (paused?.turnId === turnId) return endPaused(deps, context, paused, 'cancelled');
  return storedTurnAnswer(deps.store, context.entry.session.id, turnId);
}

/** A turn as it is in the store; 404 turn_not_found when the session has no such turn. */
export async function storedTurnAnswer(
  store: Store,
  sessionId: string,
  turnId: string,
): Promise<CancelResult> {
  const messages = await store.turnMessages(sessionId, turnId);
  if (messages.length === 0) {
    throw new AppError('turn_not_found', undefined, { context: { session_id: sessionId, turn_id: turnId } });
  }
  const reply = messages.findLast((m) => m.stop_reason !== null);
  if (!reply) return { turn_id: turnId, status: 'interrupted', agent_message: null };
  return {
    turn_id: turnId,
    status: reply.stop_reason === 'cancelled' ? 'cancelled' : 'completed',
    agent_message: publicMessage(reply),
  };
}

/**
 * Ends the paused turn for `reason` (a cancel, or its session closing): denials, cancelled results and the
 * reply of its steps' text, stop_reason `cancelled`, in one commit.
 */
export async function endPaused(
  deps: OperationDeps,
  context: OperationContext,
  paused: PausedTurn,
  reason: Exclude<SystemReason, 'expired'>,
): Promise<CancelResult> {
  const { agent } = agentOf(deps, context.entry.session.agent_id);
  const calls = await deps.store.turnToolCalls(context.entry.session.id, paused.turnId);
  const denials = systemDenials(paused.turnId, waitingApprovals(calls), reason);
  // Nothing runs while a turn is paused: a call without a result (approved, or cut short by a crash before the
  // turn paused) is one this turn will not send.
  const unsent = calls.filter((c) => c.status === null);
  const outputs = new Map<string, unknown>([
    ...denials.map((d) => [d.id, d.output] as const),
    ...unsent.map((c) => [c.id, cancelledOutput] as const),
  ]);
  const usage = noUsage();
  for (const c of calls) addUsage(usage, c.step_usage);
  const message = await commitReply(deps, context, {
    agent,
    turnId: paused.turnId,
    replyId: paused.replyId,
    key: paused.key,
    reply: {
      text: stepsText(calls),
      stop_reason: 'cancelled',
      usage,
      tool_calls: calls.flatMap((c) => summary(c, outputs.get(c.id))),
    },
    endsPaused: true,
    started: performance.now(),
    with: {
      toolResults: unsent.map((c) => ({
        id: c.id,
        turn_id: paused.turnId,
        name: c.name,
        status: 'error' as const,
        output: cancelledOutput,
        duration_ms: 0,
      })),
      decisions: denials,
    },
  });
  return { turn_id: paused.turnId, status: 'cancelled', agent_message: message };
}

/** The text the turn's steps wrote, as the step loop joins it. */
const stepsText = (calls: readonly ToolCallRecord[]) =>
  calls
    .filter((c) => c.position === 0 && c.step_text)
    .map((c) => c.step_text)
    .join(STEP_SEPARATOR);

/** A call as the reply lists it: with its result, or the result this commit gives it. */
function summary(c: ToolCallRecord, given: unknown): ToolCallSummary[] {
  const status = c.status === 'ok' || c.status === 'error' ? c.status : given === undefined ? null : 'error';
  if (status === null) return [];
  const output = given === undefined ? c.output : given;
  return [{ id: c.id, name: c.name, input: c.input, output, status, duration_ms: c.duration_ms ?? 0 }];
}
