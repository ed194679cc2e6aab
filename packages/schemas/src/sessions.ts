// Schemas of the Session resource: creating one (with its user lookup and context), the resource as
// answered, the path that names one, listing them, and terminating one (shared with the public family's
// conversations).
import { z } from 'zod';
import { approvalSchema } from './approvals.ts';
import { dateTimeQuery, jsonObject, KiB, metadataSchema, pageQuery, text, timestamp } from './common.ts';
import { SESSION_STATUSES } from './enums.ts';
import { usageTotalsSchema } from './usage.ts';
import { userExample, userReference } from './users.ts';

/** A lookup of an existing user: by id, by reference, or both (then they must name the same user). */
export const userLookup = z
  .strictObject({ id: z.string().min(1).max(200).optional(), reference: userReference.optional() })
  .refine((u) => u.id !== undefined || u.reference !== undefined, {
    message: 'Give the user id, reference or both',
    params: { type: 'missing' },
  })
  // The refinement as the document states it: `{}` is refused.
  .meta({ minProperties: 1 });

export const contextSchema = jsonObject(16 * KiB);

export const sessionCreate = z
  .strictObject({
    user: userLookup.nullable().optional(),
    context: contextSchema.nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({
    id: 'SessionCreate',
    examples: [
      {
        user: { reference: userExample.reference },
        context: { plan: 'pro' },
        metadata: { crm_ticket: 'T-1042' },
      },
    ],
  });

/** The path of every route addressed to one session. */
export const sessionParams = z.object({ session_id: z.string() });

export const sessionStatus = z.enum(SESSION_STATUSES);

/** The example session (the example conversation too), after one exchange. */
export const sessionExample = {
  id: 'ses_W9QzULQOt6KJSA13qsc61',
  agent_id: 'support',
  status: 'active',
  created_at: '2026-03-02T09:15:00.104Z',
  updated_at: '2026-03-02T09:16:21.877Z',
  user: { id: userExample.id, reference: userExample.reference },
  messages_count: 2,
  last_message_at: '2026-03-02T09:16:21.877Z',
  closed_at: null,
  close_reason: null,
  context: { plan: 'pro' },
  metadata: { crm_ticket: 'T-1042' },
  pending_approvals: [],
  handled_by: 'agent',
  handoff: null,
};

/** Who answers the session's user: the agent's model, or people (after a handoff). */
export const handledBy = z.enum(['agent', 'humans']);

/** Why and since when people handle the session, and who asked for them. */
export const handoffSchema = z
  .object({
    requested_at: timestamp,
    reason: z.string().nullable(),
    by: z.enum(['agent', 'integrator', 'user']).meta({
      description:
        'Who asked for people: the agent (its handoff_to_human tool), the integrator (API key) or the user',
    }),
  })
  .meta({ id: 'Handoff' });

/** The body of a handoff: why people should take over (optional). */
export const handoffRequest = z
  .strictObject({ reason: text().max(500).nullable().optional() })
  .meta({ examples: [{ reason: 'asks for a refund above the limit' }] });

/** The body of a handback: nothing (an empty object, or none). */
export const handbackRequest = z
  .strictObject({})
  .optional()
  .meta({ examples: [{}] });

/** A conversation's feedback (one per conversation; a second submission replaces the first). */
export const feedbackSchema = z
  .object({
    id: z.string(),
    score: z.number().int(),
    submitted_at: timestamp,
    comment: z.string().nullable(),
  })
  .meta({
    id: 'Feedback',
    examples: [
      {
        id: 'fb_JoGBbL2IqHxmRKAUYuqtq',
        score: 9,
        submitted_at: '2026-03-02T09:19:42.560Z',
        comment: 'Quick and clear',
      },
    ],
  });

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
    pending_approvals: z.array(approvalSchema).meta({
      description:
        'The tool calls a paused turn waits for; empty when none. The conversation family sees only those its end user may decide',
    }),
    handled_by: handledBy.meta({
      description: 'Who answers the user: the agent, or people (humans) after a handoff, until a handback',
    }),
    handoff: handoffSchema
      .nullable()
      .meta({ description: 'The handoff in force; null while the agent answers' }),
    usage: usageTotalsSchema.optional().meta({
      description: "What the session's model calls cost (the server-side family shows it)",
    }),
    feedback: feedbackSchema.nullable().optional().meta({
      description:
        "The end user's feedback (POST …/feedback of the conversation), null without; shown when the session is created, read or listed",
    }),
  })
  .meta({ id: 'Session', examples: [sessionExample] });

/** GET /v1/agents/sessions's query. */
export const sessionListQuery = z.object({
  status: sessionStatus.optional(),
  agent_id: z.string().max(64).optional(),
  user_id: z.string().max(200).optional(),
  user_reference: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: "The user's reference, exactly" }),
  handled_by: handledBy.optional(),
  pending_approval: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .meta({
      description: '`true`: only sessions with a tool call waiting for a decision; `false`: only the others',
    }),
  updated_after: dateTimeQuery.optional().meta({ description: 'Only sessions changed after this instant' }),
  cursor: z.string().min(1).max(200).optional().meta({
    description: 'A `next_cursor` of the previous page: the page after it (then leave `offset` out)',
  }),
  ...pageQuery,
});

/** A page of sessions: `next_cursor` (and, paging by offset, `next_offset`) is null on the last one. */
export const sessionPage = z
  .object({
    items: z.array(sessionSchema),
    next_offset: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'Paging by offset: the next one; null with a cursor' }),
    next_cursor: z.string().nullable().meta({
      description: 'Opaque: pass it as `cursor` for the next page, unchanged by sessions created since',
    }),
  })
  .meta({ id: 'SessionPage' });

export const terminateRequest = z
  .strictObject({ reason: text().max(500).nullable().optional() })
  .meta({ examples: [{ reason: 'user closed the widget' }] });

export const terminateResult = z
  .object({
    id: z.string(),
    status: z.literal('closed'),
    closed_at: timestamp,
    reason: z.string().nullable(),
  })
  .meta({
    id: 'TerminateResult',
    examples: [
      {
        id: sessionExample.id,
        status: 'closed',
        closed_at: '2026-03-02T09:20:04.981Z',
        reason: 'user closed the widget',
      },
    ],
  });
