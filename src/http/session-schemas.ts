// Schemas of sessions and messages, shared by the server-side routes (and the public family): the message
// creation request with its content blocks, the Message and Session resources, and the user reference.
import { z } from 'zod';
import { jsonObject, KiB, metadataSchema, text, timestamp } from './schemas.ts';
import { userReference } from './users.ts';

export const MAX_TEXT = 32_000;
export const MAX_BLOCKS = 16;

/** A content block; without `type`, a block with `text` is text and one with `file_id` is a file. */
export const contentBlockInput = z
  .strictObject({
    type: z.enum(['text', 'image', 'file']).optional(),
    text: text().min(1).max(MAX_TEXT).optional(),
    file_id: z.string().min(1).max(200).optional(),
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

export const contentInput = z.union(
  [text().min(1).max(MAX_TEXT), z.array(contentBlockInput).min(1).max(MAX_BLOCKS)],
  { error: 'Input should be a string or a list of content blocks' },
);

export const messageRequest = z
  .strictObject({
    content: contentInput,
    role: z.enum(['user', 'assistant']).default('user'),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({ id: 'MessageCreate' });

export type MessageRequest = z.infer<typeof messageRequest>;

export const contentBlock = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('text'), text: z.string() }),
    z.object({ type: z.literal('image'), file_id: z.string() }),
    z.object({ type: z.literal('file'), file_id: z.string() }),
  ])
  .meta({ id: 'ContentBlock' });

export const messageSchema = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    content: z.array(contentBlock),
    created_at: timestamp,
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'Message' });

export const agentReply = z.object({ agent_message: messageSchema }).meta({ id: 'AgentReply' });

/** A lookup of an existing user: by id, by reference, or both (then they must name the same user). */
export const userLookup = z
  .strictObject({ id: z.string().min(1).max(200).optional(), reference: userReference.optional() })
  .refine((u) => u.id !== undefined || u.reference !== undefined, {
    message: 'Give the user id, reference or both',
    params: { type: 'missing' },
  });

export const contextSchema = jsonObject(16 * KiB);

export const sessionCreate = z
  .strictObject({
    user: userLookup.nullable().optional(),
    context: contextSchema.nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({ id: 'SessionCreate' });

/** The path of every route addressed to one session. */
export const sessionParams = z.object({ session_id: z.string() });

export const sessionStatus = z.enum(['active', 'closed', 'expired']);

export const sessionSchema = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    status: sessionStatus,
    created_at: timestamp,
    updated_at: timestamp,
    user: z.object({ id: z.string(), reference: z.string().nullable() }).nullable(),
    messages_count: z.number().int(),
    last_message_at: timestamp.nullable(),
    closed_at: timestamp.nullable(),
    close_reason: z.string().nullable(),
    context: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Session' });

export const terminateRequest = z.strictObject({ reason: text().max(500).nullable().optional() });

export const terminateResult = z
  .object({
    id: z.string(),
    status: z.literal('closed'),
    closed_at: timestamp,
    reason: z.string().nullable(),
  })
  .meta({ id: 'TerminateResult' });

/** The Idempotency-Key header: 1–255 printable ASCII characters. */
export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(/^[\x20-\x7e]{1,255}$/, 'An Idempotency-Key is 1 to 255 printable ASCII characters')
    .optional(),
});
