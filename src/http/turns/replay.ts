// A stored turn as the log its stream would have told, in the order it was told live: each step's text, its
// tool calls started (or, for a call that must be approved, its approval requested), the results of the calls
// that ran, and where the step paused for decisions: the pause, the denied calls' results, the approved calls
// started and their results (docs/internals/decisions.md#approvals); then the reply's remaining text. A turn
// stored without its reply is paused (its stream ends at the pause), or ended when its process stopped (or
// failed, and its error is no longer known): its log ends in turn_interrupted, and a send of the same message
// under the same Idempotency-Key finishes it.
import { publicMessage } from '../../actors/public-message.ts';
import type { SendResult } from '../../actors/session-service.ts';
import { approvalOf } from '../../actors/step-approvals.ts';
import { AppError } from '../../errors.ts';
import type { SessionStatus } from '../../machines/session.ts';
import type { MessageRecord, Store, ToolCallRecord } from '../../store/store.ts';
import { type Failure, TurnLog } from './log.ts';

/** Between the texts of two steps (tool-steps.ts streams the same). */
const STEP_SEPARATOR = '\n\n';

export interface StoredTurnOptions {
  sessionId: string;
  turnId: string;
  sessionStatus: SessionStatus;
  /** The turn's result when the caller has it (an idempotent replay tells its own usage). */
  result?: SendResult | undefined;
  /** Why the turn failed, when this process still knows (else a turn without its reply was interrupted). */
  failure?: Failure | undefined;
  /** The turn is the session's paused turn: without a reply, its log ends at its pause. */
  paused?: boolean;
  /** What was told so far only, not ended: the start of a log that goes on (a turn continued). */
  open?: boolean;
}

export async function storedTurn(store: Store, o: StoredTurnOptions): Promise<TurnLog | null> {
  const { sessionId, turnId } = o;
  const messages = await store.turnMessages(sessionId, turnId);
  const first = messages[0];
  const last = messages.at(-1);
  if (!first || !last) return null;
  const log = new TurnLog();
  log.rebuilt = true;
  const replied = last.stop_reason !== null;
  const authored = messages.length === 1 && last.role === 'assistant';
  log.started(turnId, first, replied ? last.id : null);
  const ok = { ok: o.result ?? { ...okResult(turnId, last), session_status: o.sessionStatus } };
  if (authored) {
    if (!o.open) log.finish(ok);
    return log;
  }
  const calls = replied && !last.tool_calls?.length ? [] : await store.turnToolCalls(sessionId, turnId);
  tell(log, calls, replied ? textOf(last) : null);
  if (o.open) return log;
  if (replied) log.finish(ok);
  else if (o.paused) log.finish({ paused: true });
  else {
    const error =
      o.failure?.error ?? new AppError('turn_interrupted', undefined, { context: { turn_id: turnId } });
    log.finish({ error });
    log.toldBeforeFailure = o.failure?.told;
  }
  return log;
}

/** The steps' texts, tool events and pauses in live order, then what remains of the reply's text. */
function tell(log: TurnLog, calls: readonly ToolCallRecord[], reply: string | null): void {
  let told = '';
  const say = (text: string) => {
    if (text === '') return;
    const piece = told === '' ? text : STEP_SEPARATOR + text;
    told += piece;
    log.delta(piece);
  };
  const steps = new Map<number, ToolCallRecord[]>();
  for (const call of calls) steps.set(call.step, [...(steps.get(call.step) ?? []), call]);
  for (const [step, stepCalls] of steps) {
    say(stepCalls[0]?.step_text ?? '');
    for (const call of stepCalls) {
      const approval = approvalOf(call);
      if (approval) log.approvalRequested(approval);
      else log.tool('tool.started', { call_id: call.id, name: call.name, input: call.input });
    }
    completed(
      log,
      stepCalls.filter((c) => c.decision === null),
    );
    const asked = stepCalls.flatMap((c) => approvalOf(c) ?? []);
    if (asked.length === 0) continue;
    // While calls of the step wait, the pause lists those; once it went on, those it waited for.
    const waiting = asked.filter((a) =>
      stepCalls.some((c) => c.id === a.call_id && c.status === 'awaiting_approval'),
    );
    log.paused(step, waiting.length > 0 ? waiting : asked);
    // Decisions are told once the step goes on, not before.
    if (waiting.length > 0) continue;
    completed(
      log,
      stepCalls.filter((c) => c.decision === 'denied'),
    );
    const approved = stepCalls.filter((c) => c.decision === 'approved');
    for (const { id, name, input } of approved) log.tool('tool.started', { call_id: id, name, input });
    completed(log, approved);
  }
  if (reply === null) return;
  // The reply's text begins with what the steps said; a reply that does not (never expected) is told whole.
  if (reply.startsWith(told)) log.delta(reply.slice(told.length));
  else log.delta(reply);
}

/** The results of `calls` that have one, in the order they were committed (and told). */
function completed(log: TurnLog, calls: readonly ToolCallRecord[]): void {
  const done = calls
    .filter((c) => c.status === 'ok' || c.status === 'error')
    .sort((a, b) => (a.completed_seq ?? 0) - (b.completed_seq ?? 0));
  for (const { id, name, status, output } of done)
    log.tool('tool.completed', { call_id: id, name, status, output });
}

const okResult = (turnId: string, message: MessageRecord) => ({
  turn_id: turnId,
  agent_message: publicMessage(message),
  approvals: null,
  usage: message.usage,
  replayed: true,
});

const textOf = (message: MessageRecord) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
