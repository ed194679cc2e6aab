// The Conversations API shape of the Open Responses surface (docs/guides/openai-sdks.md): a conversation is a
// session, its items are the session's messages. Also the input items of a response and a cancelled response.
import { z } from 'zod';
import { messageExample } from './messages.ts';
import { responseInputMessage } from './response-inputs.ts';
import { replyItemExample } from './responses.ts';
import { sessionExample } from './sessions.ts';

const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, {
    message: 'At most 16 metadata keys',
  });

export const openConversationCreate = z
  .object({
    metadata: metadata
      .refine((m) => typeof m.agent === 'string' && m.agent !== '', {
        message: 'Name the agent of the conversation in metadata.agent',
        path: ['agent'],
      })
      .meta({
        description:
          '`agent` names the agent the conversation is with; the rest is kept as the session metadata',
      }),
    items: z
      .array(responseInputMessage)
      .max(20)
      .nullable()
      .optional()
      .meta({ description: 'User messages to start with, stored without a turn (no model answers them)' }),
  })
  .meta({
    id: 'OpenConversationCreate',
    examples: [{ metadata: { agent: 'support', crm_ticket: 'T-1042' } }],
  });

export const openConversationUpdate = z
  .object({
    metadata: metadata.meta({
      description:
        "The conversation's metadata, replaced whole; `agent`, if given, must name the conversation's agent",
    }),
  })
  .meta({
    id: 'OpenConversationUpdate',
    examples: [{ metadata: { agent: 'support', crm_ticket: 'T-1043' } }],
  });

/** The most items one request adds to a conversation (OpenAI's own bound). */
export const MAX_ADDED_ITEMS = 20;

export const conversationItemsCreate = z
  .object({
    items: z
      .array(responseInputMessage)
      .min(1)
      .max(MAX_ADDED_ITEMS)
      .meta({ description: 'User messages, stored in order without a turn: no model answers them' }),
  })
  .meta({
    id: 'OpenConversationItemsCreate',
    examples: [{ items: [{ type: 'message', role: 'user', content: 'My order number is A-1042.' }] }],
  });

export const conversationItemsQuery = z.object({
  include: z.union([z.string(), z.array(z.string())]).optional(),
});

export const openConversation = z
  .object({
    id: z.string(),
    object: z.literal('conversation'),
    created_at: z.number().int(),
    metadata: z.record(z.string(), z.string()),
  })
  .meta({
    id: 'OpenConversation',
    examples: [
      {
        id: sessionExample.id,
        object: 'conversation',
        created_at: 1_795_855_000,
        metadata: { agent: 'support' },
      },
    ],
  });

export const openConversationDeleted = z
  .object({ id: z.string(), object: z.literal('conversation.deleted'), deleted: z.literal(true) })
  .meta({
    id: 'OpenConversationDeleted',
    examples: [{ id: sessionExample.id, object: 'conversation.deleted', deleted: true }],
  });

const part = z.discriminatedUnion('type', [
  z.object({ type: z.literal('input_text'), text: z.string() }),
  z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.unknown()) }),
  z.object({
    type: z.literal('input_image'),
    file_id: z.string(),
    image_url: z.null(),
    detail: z.literal('auto'),
  }),
  z.object({ type: z.literal('input_file'), file_id: z.string() }),
]);

export const conversationItem = z.object({
  type: z.literal('message'),
  id: z.string(),
  role: z.enum(['user', 'assistant']),
  status: z.literal('completed'),
  content: z.array(part),
});

export const itemList = z
  .object({
    object: z.literal('list'),
    data: z.array(conversationItem),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({
    id: 'OpenItemList',
    examples: [
      {
        object: 'list',
        data: [replyItemExample],
        first_id: messageExample.id,
        last_id: messageExample.id,
        has_more: false,
      },
    ],
  });

export const itemListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
  after: z.string().max(200).optional(),
  include: z.union([z.string(), z.array(z.string())]).optional(),
});

export const responseParams = z.object({ response_id: z.string().max(420) });

export const responseReadQuery = z.object({
  stream: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .meta({ description: "`true`: the response's event stream again, after `starting_after`" }),
  starting_after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: 'The sequence_number of the last event received' }),
  include: z.union([z.string(), z.array(z.string())]).optional(),
});
