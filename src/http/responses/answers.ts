// A response that pauses, and the request that answers it (docs/guides/openai-sdks.md#functions-and-approvals).
// A call to a function the client declared ends the response (completed, its last item the `function_call`);
// a call that must be approved leaves it in progress, the call shown as a `function_call` item. The client
// answers with `previous_response_id` and `function_call_output` (the function's output) or
// `mcp_approval_response` (a decision, naming the call's `call_id` as `approval_request_id`) items: Parley's
// own decision operation applies them, each exactly once, and the same turn goes on. Its answer lists only
// what the turn did after the answered pause, so that a client never sees a call it has answered again.

import type { ResponseAnswerItem, ResponseObject, ResponseOutputItem } from '#schemas';
import type { Decision } from '../../actors/approvals.ts';
import type { PublicMessage } from '../../actors/public-message.ts';
import type { Approval } from '../../actors/step-approvals.ts';
import { ValidationError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import {
  messageItem,
  parseResponseId,
  type ResponseFacts,
  responseObject,
  statusOf,
  textOf,
  toolItems,
} from './mapping.ts';

/** The answers as decisions on the paused turn's calls. */
export function decisionsOf(answers: readonly ResponseAnswerItem[]): Decision[] {
  return answers.map((a) =>
    a.type === 'function_call_output'
      ? {
          call_id: a.call_id,
          approved: true,
          reason: null,
          output: typeof a.output === 'string' ? a.output : a.output.map((p) => p.text).join(''),
        }
      : { call_id: a.approval_request_id, approved: a.approve, reason: a.reason ?? null },
  );
}

/** The turn the answers are for: the one `previous_response_id` names (answers need it). */
export function answeredTurn(previousResponseId: string | null | undefined): string {
  const turnId = previousResponseId ? parseResponseId(previousResponseId)?.turnId : undefined;
  if (!turnId) {
    throw ValidationError.at(
      ['body', 'previous_response_id'],
      'function_call_output and mcp_approval_response items answer a paused response: name it with previous_response_id',
      'value_error',
    );
  }
  return turnId;
}

/** The step whose pause the answers are for (that of their first call; 0 when the turn has no such call). */
export async function answeredStep(
  store: Store,
  sessionId: string,
  turnId: string,
  decisions: readonly Decision[],
): Promise<number> {
  const calls = await store.turnToolCalls(sessionId, turnId);
  return calls.find((c) => c.id === decisions[0]?.call_id)?.step ?? 0;
}

/**
 * The output of a turn after step `after`: that step's calls still waiting and the results of those decided
 * (an approved call's, a denied one's; not the outputs the client sent for its `functions`), each later call
 * as a `function_call` item with its `function_call_output` once it has a result, then the reply's message,
 * if there is one yet.
 */
export async function turnOutput(
  store: Store,
  sessionId: string,
  turnId: string,
  after: number,
  reply: PublicMessage | null,
  functions: ReadonlySet<string> = new Set(),
): Promise<ResponseOutputItem[]> {
  const calls = await store.turnToolCalls(sessionId, turnId);
  const items: ResponseOutputItem[] = [];
  for (const c of calls) {
    const done = c.status === 'ok' || c.status === 'error';
    const { call, output } = toolItems({
      call_id: c.id,
      name: c.name,
      input: c.input,
      output: c.output,
      done,
    });
    // The answered step: the calls still waiting (told again: the response waits for them), and the results
    // of those decided since (not the outputs of the client's functions: the client sent them).
    if (c.step === after && c.status === 'awaiting_approval') items.push(call);
    if (c.step < after || (c.step === after && c.decision === null)) continue;
    if (c.step > after) items.push(call);
    if (output && !(functions.has(c.name) && c.decision !== null)) items.push(output);
  }
  if (reply) {
    const status = statusOf(reply.stop_reason).status === 'incomplete' ? 'incomplete' : 'completed';
    items.push(messageItem(reply.id, textOf(reply), status));
  }
  return items;
}

/** Whether a pause waits only for the client's functions (each declared by the turn, or named in `declared`). */
export const waitsForFunctions = (approvals: readonly Approval[], declared: ReadonlySet<string>) =>
  approvals.length > 0 && approvals.every((a) => a.function === true || declared.has(a.tool));

/**
 * A response object for a turn as a send or a decision left it: the reply, or a pause. A pause that waits
 * only for the client's functions is a completed response (the client runs them and answers); one that
 * waits for an approval is in progress.
 */
export function answerObject(
  facts: ResponseFacts,
  result: { agent_message: PublicMessage | null; approvals: Approval[] | null },
  output: ResponseOutputItem[],
): ResponseObject {
  const object = responseObject(facts, result, output);
  const declared = new Set((facts.tools ?? []).map((t) => t.name));
  if (result.agent_message || !waitsForFunctions(result.approvals ?? [], declared)) return object;
  return { ...object, status: 'completed', completed_at: Math.floor(Date.now() / 1000) };
}
