// Schemas of messages and of sending one, shared by both families: the creation request with its content
// blocks, the Message resource, the Idempotency-Key header, and the reply a plain send answers. (The event
// stream of a streamed send and the errors a turn may end in are in turn-events.ts.)
import { z } from 'zod';
import { metadataSchema, text, timestamp } from './common.ts';
import { STOP_REASONS } from './enums.ts';
import { conversationFileExample } from './files.ts';

export const MAX_TEXT = 32_000;
export const MAX_BLOCKS = 16;

const blockFileId = z.string().min(1).max(200);

/** A content block; without `type`, a block with `text` is text and one with `file_id` is a file. */
export const contentBlockInput = z
  .strictObject({
    type: z.enum(['text', 'image', 'file']).optional(),
    text: text().min(1).max(MAX_TEXT).optional(),
    file_id: blockFileId.optional(),
  })
  .superRefine((block, ctx) => {
    const type =
      block.type ?? (block.text !== undefined ? 'text' : block.file_id !== undefined ? 'file' : null);
    const need = type === 'text' ? 'text' : 'file_id';
    const refuse = type === 'text' ? 'file_id' : 'text';
    if (block[need] === undefined) {
      ctx.addIssue({ code: 'custom', path: [need], message: 'Field required', params: { type: 'missing' } });
    }
    if (type !== null && block[refuse] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [refuse],
        message: `Not allowed in a ${type} block`,
        params: { type: 'extra_forbidden' },
      });
    }
  })
  .meta({ id: 'ContentBlockCreate' });

/**
 * contentBlockInput as the document states it: a union keyed on `type`, where `type` may be left out of a
 * text block (`text` implies it) and a file block (`file_id` implies it). Exactly one branch matches a valid
 * block. Validation stays contentBlockInput's, whose 422s name the missing or extra field; a test checks
 * that both accept the same blocks.
 */
export const contentBlockDocumented = z
  .union([
    z.strictObject({
      type: z.literal('text').optional().meta({ description: 'Implied by `text` when left out' }),
      text: text().min(1).max(MAX_TEXT),
    }),
    z.strictObject({ type: z.literal('image'), file_id: blockFileId }),
    z.strictObject({
      type: z.literal('file').optional().meta({ description: 'Implied by `file_id` when left out' }),
      file_id: blockFileId,
    }),
  ])
  .meta({ description: 'A text block, an image or a file (by the id of an uploaded file)' });

export const contentInput = z.union(
  [text().min(1).max(MAX_TEXT), z.array(contentBlockInput).min(1).max(MAX_BLOCKS)],
  { error: 'Input should be a string or a list of content blocks' },
);

/** The person who wrote an operator's message (an assistant message sent while people handle the session). */
export const authorSchema = z
  .strictObject({ id: text().min(1).max(200), name: text().min(1).max(200) })
  .meta({ id: 'Author' });

export const messageRequest = z
  .strictObject({
    content: contentInput,
    role: z.enum(['user', 'assistant']).default('user'),
    metadata: metadataSchema.nullable().optional(),
    author: authorSchema.optional().meta({
      description:
        'Who wrote an assistant message (an operator), shown to the end user; not on user messages',
    }),
  })
  .meta({
    id: 'MessageCreate',
    examples: [
      { content: 'What are your opening hours?' },
      {
        content: [
          { type: 'text', text: 'Is this the right part?' },
          { type: 'image', file_id: conversationFileExample.id },
        ],
        metadata: { crm_ticket: 'T-1042' },
      },
    ],
  });

export type MessageRequest = z.infer<typeof messageRequest>;

export const contentBlock = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('text'), text: z.string() }),
    z.object({ type: z.literal('image'), file_id: z.string() }),
    z.object({ type: z.literal('file'), file_id: z.string() }),
  ])
  .meta({ id: 'ContentBlock' });

/** What model calls cost, as their provider reported them, priced with the agent's `pricing`. */
export const usageSchema = z
  .object({
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    cached_input_tokens: z.number().int().meta({
      description: 'Of the input tokens, those read from the provider’s prompt cache; 0 when it does not say',
    }),
    reasoning_tokens: z.number().int().meta({ description: '0 when the provider does not say' }),
    model: z.string().nullable().meta({ description: 'The model that answered' }),
    cost_micro_usd: z.number().int().meta({
      description: 'In millionths of a US dollar, from the agent’s pricing; 0 without pricing',
    }),
  })
  .meta({ id: 'Usage' });

/** A tool call of a turn, as its reply shows it: what was asked, what came back. */
export const toolCallSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    input: z.unknown(),
    output: z.unknown(),
    status: z.enum(['ok', 'error']),
    duration_ms: z.number().int(),
  })
  .meta({ id: 'ToolCall' });

/** The agent's reply to the first example of MessageCreate. */
export const messageExample = {
  id: 'msg_IYSjka3ruqO7fQHIdFHWN',
  role: 'assistant',
  content: [{ type: 'text', text: 'We are open 9:00 to 18:00, Monday to Friday.' }],
  created_at: '2026-03-02T09:16:21.877Z',
  metadata: null,
  stop_reason: 'end',
  usage: {
    input_tokens: 412,
    output_tokens: 14,
    cached_input_tokens: 0,
    reasoning_tokens: 0,
    model: 'gpt-4.1-mini',
    cost_micro_usd: 187,
  },
  tool_calls: [],
  author: null,
};

/** The same reply as the public family shows it: no metadata, no tool calls (the agent exposes none). */
const { metadata: _metadata, tool_calls: _calls, ...conversationMessageExample } = messageExample;

export const messageSchema = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    content: z.array(contentBlock),
    created_at: timestamp,
    metadata: z.record(z.string(), z.unknown()).nullable(),
    stop_reason: z.enum(STOP_REASONS).nullable().meta({
      description:
        'Why the model stopped: end, max_tokens (the text is cut), max_steps, content_filter, error, cancelled or budget (its end-user’s budget ran out between steps); null on messages no model produced (user, authored, inactivity)',
    }),
    usage: usageSchema
      .nullable()
      .meta({ description: 'The tokens of the model calls that produced the message; null likewise' }),
    tool_calls: z.array(toolCallSchema).nullable().meta({
      description:
        "The turn's tool calls, in the order the model asked for them; null on messages no model produced",
    }),
    author: z
      .object({ id: z.string(), name: z.string() })
      .nullable()
      .meta({ description: 'The operator who wrote the message; null on every other message' }),
  })
  .meta({ id: 'Message', examples: [messageExample] });

/**
 * The Message of the public family: its metadata is the integrator's, never shown to the end user; its tool
 * calls only where the agent exposes them (`expose_tools`).
 */
export const conversationMessageSchema = messageSchema
  .omit({ metadata: true })
  .extend({ tool_calls: messageSchema.shape.tool_calls.optional() })
  .meta({ id: 'ConversationMessage', examples: [conversationMessageExample] });

/** The Idempotency-Key header: 1–255 printable ASCII characters. */
export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(/^[\x20-\x7e]{1,255}$/, 'An Idempotency-Key is 1 to 255 printable ASCII characters')
    .optional(),
});

export const agentReply = z.object({ agent_message: messageSchema }).meta({ id: 'AgentReply' });

/** A send while people handle the session: the message is stored, no model answers. */
export const humansReply = z
  .object({
    agent_message: messageSchema
      .nullable()
      .meta({ description: 'Always null here: people handle the session, and no model answered' }),
    handled_by: z.literal('humans'),
  })
  .meta({ id: 'HandledByHumans', examples: [{ agent_message: null, handled_by: 'humans' }] });

export const conversationReply = z
  .object({ agent_message: conversationMessageSchema })
  .meta({ id: 'ConversationReply' });

const humansExample = { agent_message: null, handled_by: 'humans' };

/** A send's 201 (API key): the agent's reply, or none while people handle the session. */
export const sendReply = z
  .union([agentReply, humansReply])
  .meta({ examples: [{ agent_message: messageExample }, humansExample] });

/** A send's 201 (session token): the agent's reply, or none while people handle the conversation. */
export const conversationSendReply = z
  .union([conversationReply, humansReply])
  .meta({ examples: [{ agent_message: conversationMessageExample }, humansExample] });
