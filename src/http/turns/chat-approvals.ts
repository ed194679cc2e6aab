// Approvals in the AI SDK's own words, for the chat routes (docs/guides/ai-sdk.md#approvals): a call the caller
// may decide goes out as a dynamic tool part followed by a `tool-approval-request` whose approvalId is the call
// id, and what `addToolApprovalResponse` leaves in the newest assistant message (tool parts in state
// `approval-responded`) comes back in as the decisions `POST …/turns/{turn_id}/approvals` takes.
import type { UIMessageChunk } from 'ai';
import { MAX_DECISIONS, type UIMessageInput } from '#schemas';
import type { Decision } from '../../actors/approvals.ts';
import type { Approval } from '../../actors/step-approvals.ts';
import { ValidationError, type ValidationIssue } from '../../errors.ts';
import type { TurnLog } from './log.ts';

/** What a chat request decides: the calls, and the turn its message names (null: the session's paused one). */
export interface ChatDecisions {
  turnId: string | null;
  decisions: Decision[];
}

/**
 * The decisions of `messages`, when the newest is an assistant message with answered approvals; null when
 * it is not (the request is a send). Two answers for one call are a 422 naming the second.
 */
export function chatDecisions(messages: readonly UIMessageInput[]): ChatDecisions | null {
  const index = messages.length - 1;
  const message = messages[index];
  if (message?.role !== 'assistant') return null;
  const decisions: Decision[] = [];
  const issues: ValidationIssue[] = [];
  const seen = new Map<string, number>();
  message.parts.forEach((part, p) => {
    const approval = part.approval;
    if (part.state !== 'approval-responded' || approval?.approved === undefined) return;
    const earlier = seen.get(approval.id);
    if (earlier !== undefined) {
      issues.push({
        loc: ['body', 'messages', index, 'parts', p, 'approval', 'id'],
        msg: `Part ${earlier} answers this approval already: one answer per call`,
        type: 'value_error',
      });
      return;
    }
    seen.set(approval.id, p);
    decisions.push({ call_id: approval.id, approved: approval.approved, reason: approval.reason ?? null });
  });
  if (decisions.length > MAX_DECISIONS) {
    issues.push({
      loc: ['body', 'messages', index, 'parts'],
      msg: `At most ${MAX_DECISIONS} answered approvals`,
      type: 'too_long',
    });
  }
  if (issues.length > 0) throw new ValidationError(issues);
  if (decisions.length === 0) return null;
  const turnId = (message.metadata as { turn_id?: unknown } | undefined)?.turn_id;
  return { turnId: typeof turnId === 'string' ? turnId : null, decisions };
}

/**
 * A call waiting for a decision as the SDK expects it: the tool part with its input, then the request that
 * puts the part in state `approval-requested` (useChat then shows it and `addToolApprovalResponse` answers it).
 */
export const approvalChunks = (approval: Approval): UIMessageChunk[] => [
  {
    type: 'tool-input-available',
    toolCallId: approval.call_id,
    toolName: approval.tool,
    input: approval.input,
    // As every Parley tool call is told: the client knows none of them.
    dynamic: true,
  },
  { type: 'tool-approval-request', approvalId: approval.call_id, toolCallId: approval.call_id },
];

/** A denied call's part moves to `output-denied`: the SDK's word for a call that never ran. */
export const deniedChunk = (callId: string): UIMessageChunk => ({
  type: 'tool-output-denied',
  toolCallId: callId,
});

/** The reply text a stored turn told after its last pause (what a client that answered it lacks); null if none. */
export function textAfterPause(log: TurnLog | null): string | null {
  const pause = log?.items.findLastIndex((item) => 'pause' in item) ?? -1;
  if (!log || pause < 0) return null;
  return log.items
    .slice(pause + 1)
    .flatMap((item) => ('text' in item ? [item.text] : []))
    .join('');
}
