// Schemas of approvals and cancel (docs/guides/approvals.md): a tool call waiting for a person's decision (an
// Approval), a turn's state, the 202 answer of a turn that paused, the decisions a client sends, and what a
// cancel answers. Both families use them; the public one is shown only the calls its end user may decide.
import { z } from 'zod';
import { text, timestamp } from './common.ts';
import { conversationMessageSchema, messageExample, messageSchema } from './messages.ts';

/** Who may decide a call: its end user or the integrator (`user`), or only the integrator (`operator`). */
export const approverSchema = z.enum(['user', 'operator']);

export const approvalExample = {
  call_id: 'call_IYSjkb0pLq2wXr8sTuVb3',
  turn_id: 'turn_IYSjka3ruqO7fQHIdFHWN',
  tool: 'refund',
  input: { order_id: 'A-1042', amount: 25 },
  approver: 'operator',
  requested_at: '2026-03-02T09:16:20.114Z',
  expires_at: '2026-03-03T09:16:20.114Z',
};

export const approvalSchema = z
  .object({
    call_id: z.string(),
    turn_id: z
      .string()
      .meta({ description: 'The turn that waits for the decision: the turn a decision or a cancel names' }),
    tool: z
      .string()
      .meta({ description: 'The tool as the model named it (an MCP tool as <server>__<tool>)' }),
    input: z
      .unknown()
      .meta({ description: 'What the model asked the tool to do, exactly as it will be sent' }),
    approver: approverSchema,
    requested_at: timestamp,
    expires_at: timestamp.meta({ description: 'After it the call counts as denied, with reason "expired"' }),
  })
  .meta({ id: 'Approval', examples: [approvalExample] });

/** What a turn is: waiting for decisions, finished with a reply (or a cancelled one), or ended without one. */
export const turnStatus = z.enum(['awaiting_approval', 'completed', 'cancelled', 'interrupted']);

export const turnStateSchema = z
  .object({
    id: z.string(),
    status: turnStatus,
    approvals: z
      .array(approvalSchema)
      .meta({ description: 'The calls the turn waits for (those the caller may decide); empty otherwise' }),
  })
  .meta({ id: 'TurnState' });

export const pausedExample = {
  agent_message: null,
  turn: { id: 'turn_IYSjka3ruqO7fQHIdFHWN', status: 'awaiting_approval', approvals: [approvalExample] },
};
// Declared nullable rather than null: generated clients drop a property whose only type is null.
const noReplyYet = { description: 'Always null here: the turn has no reply yet' };

/** The 202 answer of a send (or a decision) whose turn waits for decisions: no reply yet. */
export const pausedReply = z
  .object({ agent_message: messageSchema.nullable().meta(noReplyYet), turn: turnStateSchema })
  .meta({ id: 'PausedReply', examples: [pausedExample] });

export const conversationPausedReply = z
  .object({ agent_message: conversationMessageSchema.nullable().meta(noReplyYet), turn: turnStateSchema })
  .meta({ id: 'ConversationPausedReply', examples: [pausedExample] });

export const MAX_DECISIONS = 16;

export const decisionSchema = z.strictObject({
  call_id: z.string().min(1).max(200),
  approved: z.boolean(),
  reason: text().max(500).nullable().optional(),
});

export const approvalsRequest = z
  .strictObject({ decisions: z.array(decisionSchema).min(1).max(MAX_DECISIONS) })
  .superRefine((body, ctx) => {
    const seen = new Map<string, number>();
    body.decisions.forEach((d, i) => {
      const earlier = seen.get(d.call_id);
      if (earlier === undefined) seen.set(d.call_id, i);
      else
        ctx.addIssue({
          code: 'custom',
          path: ['decisions', i, 'call_id'],
          message: `Decision ${earlier} is for this call already: one decision per call`,
          params: { type: 'value_error' },
        });
    });
  })
  .meta({
    id: 'ApprovalDecisions',
    examples: [
      { decisions: [{ call_id: approvalExample.call_id, approved: false, reason: 'Over the limit' }] },
    ],
  });

export type ApprovalsRequest = z.infer<typeof approvalsRequest>;

/** A turn cancelled while its model wrote: the text so far is its reply. */
const cancelledMessage = {
  ...messageExample,
  content: [{ type: 'text', text: 'We are open 9:00' }],
  stop_reason: 'cancelled',
  usage: { ...messageExample.usage, input_tokens: 0, output_tokens: 0, cost_micro_usd: 0 },
};
const { metadata: _metadata, tool_calls: _calls, ...cancelledConversationMessage } = cancelledMessage;
const cancelledTurn = { id: 'turn_IYSjka3ruqO7fQHIdFHWN', status: 'cancelled', approvals: [] };

/** What a cancel answers: the turn as it is once the cancel is committed, and its reply if it has one. */
export const cancelResult = z
  .object({ agent_message: messageSchema.nullable(), turn: turnStateSchema })
  .meta({ id: 'CancelResult', examples: [{ agent_message: cancelledMessage, turn: cancelledTurn }] });

export const conversationCancelResult = z
  .object({ agent_message: conversationMessageSchema.nullable(), turn: turnStateSchema })
  .meta({
    id: 'ConversationCancelResult',
    examples: [{ agent_message: cancelledConversationMessage, turn: cancelledTurn }],
  });
