// Schemas of the AI SDK chat routes: the body `useChat` sends through DefaultChatTransport (`{ id, messages,
// trigger, messageId, … }`, read leniently: fields Parley does not use pass unchecked) and the UI message
// stream answered, for the OpenAPI document. A tool part's `approval` is checked wherever it appears: it is how
// `addToolApprovalResponse` answers an approval request, and its decision is read from the newest message.
import { z } from 'zod';
import { text } from './common.ts';

/** A tool part's approval: the request's id (a Parley call id) and, once the user answered, the decision. */
const toolApproval = z
  .looseObject({
    id: z
      .string()
      .min(1)
      .max(200)
      .meta({ description: "The approval request's id: the call id Parley sent" }),
    approved: z.boolean().optional(),
    reason: text().max(500).optional(),
  })
  .meta({
    id: 'ToolApproval',
    description: "A tool part's approval request and, once answered, its decision",
  });

/** A part of a UI message; the newest user message's `text` and `file` parts are read. */
const uiMessagePart = z
  .looseObject({
    type: z.string(),
    state: z.string().optional(),
    approval: toolApproval.optional(),
  })
  .superRefine((part, ctx) => {
    // An answered approval says which way it went.
    if (part.state === 'approval-responded' && part.approval?.approved === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: part.approval ? ['approval', 'approved'] : ['approval'],
        message: 'Field required',
        params: { type: 'missing' },
      });
    }
  })
  .meta({
    id: 'UIMessagePart',
    description:
      "A part of an AI SDK UI message ('text', 'file', a tool part…). A tool part in state 'approval-responded' carries `approval: { id, approved, reason? }`.",
  });

const uiMessage = z
  .looseObject({
    id: z.string(),
    role: z.enum(['system', 'user', 'assistant']),
    parts: z.array(uiMessagePart),
  })
  .meta({ id: 'UIMessage', description: 'An AI SDK UI message' });

export type UIMessageInput = z.infer<typeof uiMessage>;

export const chatRequest = z
  .looseObject({
    id: z.string().optional().meta({ description: "The chat's id on the client (not used)" }),
    messages: z.array(uiMessage).min(1).meta({
      description:
        'The chat as the client holds it. Only the newest message is read. A user message is sent as the next message of the session, which holds the history: its text parts become text blocks; a file part whose url is a Parley file id (file_…, uploaded first) becomes an image block (mediaType image/…) or a file block; other parts are ignored. An assistant message whose tool parts are in state approval-responded (what addToolApprovalResponse leaves) is read as decisions on the calls its turn waits for, as POST …/turns/{turn_id}/approvals takes them: approval.id is the call id, approved and reason the decision.',
    }),
    trigger: z.string().optional().meta({
      description:
        "'submit-message' or 'regenerate-message'; both send the newest user message (or the decisions of the newest assistant message)",
    }),
    messageId: z.string().optional().meta({ description: 'Not used' }),
  })
  .meta({
    id: 'ChatRequest',
    // As DefaultChatTransport sends it, the client's own ids included.
    examples: [
      {
        id: 'Hq3sVwE9kLm2PzXa',
        messages: [
          {
            id: 'b7TnQ4cYx2RfJp8K',
            role: 'user',
            parts: [{ type: 'text', text: 'What are your opening hours?' }],
          },
        ],
        trigger: 'submit-message',
      },
    ],
  });

export type ChatRequest = z.infer<typeof chatRequest>;

/** The 200 answer of a chat route, for the OpenAPI document. */
export const uiMessageStreamResponse = {
  description:
    "The AI SDK UI message stream (header x-vercel-ai-ui-message-stream: v1): Server-Sent Events `data: {chunk}` — start (messageId: the agent reply's id), start-step, text-start, text-delta…, text-end (with tool-input-available and tool-output-available or tool-output-error between steps, where the caller sees tool calls; tool-input-available then tool-approval-request, approvalId the call id, for each call the caller may decide when the turn waits for decisions, and tool-output-denied for a denied one), finish-step, finish; or an error chunk once the stream started — then `data: [DONE]`",
  content: { 'text/event-stream': { schema: z.string() } },
};
