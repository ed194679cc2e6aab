// Schemas of the conversation family: the Conversation record (what a front-end may see of a session), the
// path that names one, its session token, and the feedback and inactivity requests made inside it.
import { z } from 'zod';
import { metadataSchema, text, timestamp } from './common.ts';
import { conversationMessageSchema } from './messages.ts';
import { sessionExample, sessionSchema, sessionStatus } from './sessions.ts';

/** The example session as its front-end sees it. */
const { user: _user, context: _context, metadata: _metadata, ...conversationExample } = sessionExample;

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
    pending_approvals: true,
    handled_by: true,
    handoff: true,
  })
  .meta({ id: 'Conversation', examples: [conversationExample] });

/** The path of every route addressed to one conversation. */
export const conversationParams = z.object({ conversation_id: z.string() });

const sessionToken = {
  session_token: z.string().meta({ description: 'Send as Authorization: Bearer <session_token>' }),
  expires_at: timestamp.meta({ description: 'When the token stops being accepted' }),
};

/** A token for the example conversation, minted as it started (PARLEY_TOKEN_TTL: 15 minutes). */
const sessionTokenExample = {
  session_token:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0aWQiOiJhY21lIiwiYWd0Ijoic3VwcG9ydCIsImtpZCI6ImtleV9jMWJqVU5WdVRGNml4ZVpuUE13S3EiLCJpc3MiOiJwYXJsZXkiLCJhdWQiOiJwYXJsZXktcHVibGljIiwic3ViIjoic2VzX1c5UXpVTFFPdDZLSlNBMTNxc2M2MSIsImp0aSI6InRva19mN2cyMktUUUVBVHdERnJkalJpeFgiLCJpYXQiOjE3NzI0NDI5MDAsImV4cCI6MTc3MjQ0MzgwMH0.TL9reHX0azkgnwUunrIr82gcoEDcdt0qQk69hId12oE',
  expires_at: '2026-03-02T09:30:00.000Z',
};

export const sessionTokenSchema = z
  .object(sessionToken)
  .meta({ id: 'SessionToken', examples: [sessionTokenExample] });

export const conversationStart = z.object({ conversation: conversationSchema, ...sessionToken }).meta({
  id: 'ConversationStart',
  // As the conversation started: no message yet.
  examples: [
    {
      conversation: {
        ...conversationExample,
        updated_at: conversationExample.created_at,
        messages_count: 0,
        last_message_at: null,
      },
      ...sessionTokenExample,
    },
  ],
});

export const feedbackRequest = z
  .strictObject({
    score: z.number().int().min(0).max(10).meta({ description: 'NPS-style, 0 to 10' }),
    comment: text().max(2000).nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({ id: 'FeedbackCreate', examples: [{ score: 9, comment: 'Quick and clear' }] });

export const inactivityRequest = z
  .strictObject({ step: z.enum(['warning', 'final']) })
  .meta({ id: 'InactivityCreate', examples: [{ step: 'warning' }] });

export const inactivityResult = z
  .object({
    step: z.enum(['warning', 'final']),
    message: conversationMessageSchema,
    conversation_status: sessionStatus,
  })
  .meta({
    id: 'InactivityResult',
    examples: [
      {
        step: 'warning',
        // The agent's inactivity.warning_message, stored as its message; no model produced it.
        message: {
          id: 'msg_tVhKPRLot4YUvd5lHVjvW',
          role: 'assistant',
          content: [{ type: 'text', text: 'Are you still there? This conversation will close soon.' }],
          created_at: '2026-03-02T09:18:21.402Z',
          stop_reason: null,
          usage: null,
          author: null,
        },
        conversation_status: 'active',
      },
    ],
  });
