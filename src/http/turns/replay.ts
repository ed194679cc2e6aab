// A stored turn as the log its stream would have told, in the order it was told live: each step's text, its
// tool calls started, their results in the order they were committed, and the reply's remaining text. A turn
// stored without its reply ended when its process stopped (or failed, and its error is no longer known): its
// log ends in turn_interrupted, and a send of the same message under the same Idempotency-Key finishes it.
import { publicMessage } from '../../actors/public-message.ts';
import type { SendResult } from '../../actors/session-service.ts';
import { AppError } from '../../errors.ts';
import type { SessionStatus } from '../../machines/session.ts';
import type { MessageRecord, Store, ToolCallRecord } from '../../store/store.ts';
import { type Failure, TurnLog } from './log.ts';

/** Between the texts of two steps (tool-steps.ts streams the same). */
const STEP_SEPARATOR = '\n\n';

export async function storedTurn(
  store: Store,
  sessionId: string,
  turnId: string,
  sessionStatus: SessionStatus,
  /** The turn's result when the caller has it (an idempotent replay tells its own usage). */
  result?: SendResult,
  /** Why the turn failed, when this process still knows (else a turn without its reply was interrupted). */
  failure?: Failure,
): Promise<TurnLog | null> {
  const messages = await store.turnMessages(sessionId, turnId);
  const first = messages[0];
  const last = messages.at(-1);
  if (!first || !last) return null;
  const log = new TurnLog();
  log.rebuilt = true;
  const replied = last.stop_reason !== null;
  const authored = messages.length === 1 && last.role === 'assistant';
  log.started(turnId, first, replied ? last.id : null);
  const ok = { ok: result ?? { ...okResult(turnId, last), session_status: sessionStatus } };
  if (authored) {
    log.finish(ok);
    return log;
  }
  const calls = replied && !last.tool_calls?.length ? [] : await store.turnToolCalls(sessionId, turnId);
  tell(log, calls, replied ? textOf(last) : null);
  log.finish(
    replied
      ? ok
      : {
          error:
            failure?.error ?? new AppError('turn_interrupted', undefined, { context: { turn_id: turnId } }),
        },
  );
  log.toldBeforeFailure = replied ? undefined : failure?.told;
  return log;
}

/** The steps' texts and tool events in live order, then what remains of the reply's text. */
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
  for (const stepCalls of steps.values()) {
    say(stepCalls[0]?.step_text ?? '');
    for (const { id, name, input } of stepCalls) log.tool('tool.started', { call_id: id, name, input });
    const done = stepCalls
      .filter((c) => c.status !== null)
      .sort((a, b) => (a.completed_seq ?? 0) - (b.completed_seq ?? 0));
    for (const { id, name, status, output } of done)
      log.tool('tool.completed', { call_id: id, name, status, output });
  }
  if (reply === null) return;
  // The reply's text begins with what the steps said; a reply that does not (never expected) is told whole.
  if (reply.startsWith(told)) log.delta(reply.slice(told.length));
  else log.delta(reply);
}

const okResult = (turnId: string, message: MessageRecord) => ({
  turn_id: turnId,
  agent_message: publicMessage(message),
  usage: message.usage,
  replayed: true,
});

const textOf = (message: MessageRecord) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
