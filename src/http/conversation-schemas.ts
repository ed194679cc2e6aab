// Schemas of the conversation family: the Conversation record (what a front-end may see of a session), the
// path that names one, its session token, and the feedback and inactivity requests made inside it.
import { z } from 'zod';
import type { SessionRecord } from '../store/store.ts';
import { conversationMessageSchema } from './message-schemas.ts';
import { metadataSchema, text, timestamp } from './schemas.ts';
import { sessionSchema, sessionStatus } from './session-schemas.ts';

/** The conversation record: no metadata, context or user. */
export const conversationSchema = sessionSchema
  .pick({
    id: true,
    agent_id: true,
    status: true,
    created_at: true,
    updated_at: true,
    closed_at: true,
    close_reason: true,
    messages_count: true,
    last_message_at: true,
  })
  .meta({ id: 'Conversation' });

export const toConversation = (s: SessionRecord): z.infer<typeof conversationSchema> => ({
  id: s.id,
  agent_id: s.agent_id,
  status: s.status,
  created_at: s.created_at,
  updated_at: s.updated_at,
  closed_at: s.closed_at,
  close_reason: s.close_reason,
  messages_count: s.messages_count,
  last_message_at: s.last_message_at,
});

/** The path of every route addressed to one conversation. */
export const conversationParams = z.object({ conversation_id: z.string() });

const sessionToken = {
  session_token: z.string().meta({ description: 'Send as Authorization: Bearer <session_token>' }),
  expires_at: timestamp.meta({ description: 'When the token stops being accepted' }),
};

export const sessionTokenSchema = z.object(sessionToken).meta({ id: 'SessionToken' });

export const conversationStart = z
  .object({ conversation: conversationSchema, ...sessionToken })
  .meta({ id: 'ConversationStart' });

export const feedbackRequest = z
  .strictObject({
    score: z.number().int().min(0).max(10).meta({ description: 'NPS-style, 0 to 10' }),
    comment: text().max(2000).nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({ id: 'FeedbackCreate' });

export const feedbackSchema = z
  .object({
    id: z.string(),
    score: z.number().int(),
    submitted_at: timestamp,
    comment: z.string().nullable(),
  })
  .meta({ id: 'Feedback' });

export const inactivityRequest = z
  .strictObject({ step: z.enum(['warning', 'final']) })
  .meta({ id: 'InactivityCreate' });

export const inactivityResult = z
  .object({
    step: z.enum(['warning', 'final']),
    message: conversationMessageSchema,
    conversation_status: sessionStatus,
  })
  .meta({ id: 'InactivityResult' });
