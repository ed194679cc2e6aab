// Starting a conversation and refreshing its session token (server-side family, API key): the integrator's
// server mints the token its front-end then uses on the public family. A conversation is a session.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionService } from '../actors/session-service.ts';
import type { SessionTokens } from '../auth/session-tokens.ts';
import { AppError } from '../errors.ts';
import type { SessionRecord } from '../store/store.ts';
import { assertAgentAllowed, tenantOf } from './api-key-auth.ts';
import { authErrors, errorEnvelope, timestamp } from './schemas.ts';
import { sessionCreate, sessionSchema } from './session-schemas.ts';

/** The conversation record: what a front-end may see of a session (no metadata, context or user). */
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

export const conversationsRoutes: FastifyPluginAsyncZod<{
  sessions: SessionService;
  tokens: SessionTokens;
}> = async (app, { sessions, tokens }) => {
  app.post(
    '/v1/agents/:agent_id/conversations',
    {
      schema: {
        tags: ['conversations'],
        summary: 'Start a conversation and mint its first session token',
        params: z.object({ agent_id: z.string() }),
        body: sessionCreate,
        response: {
          201: z
            .object({ conversation: conversationSchema, ...sessionToken })
            .meta({ id: 'ConversationStart' }),
          503: errorEnvelope,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const { agent_id } = request.params;
      assertAgentAllowed(request, agent_id);
      const session = await sessions.createSession(tenantOf(request), agent_id, request.body);
      const token = await tokens.mint({
        conversationId: session.id,
        tenantId: session.tenant_id,
        agentId: agent_id,
      });
      return reply.code(201).send({ conversation: toConversation(session), ...token });
    },
  );

  app.post(
    '/v1/agents/conversations/:conversation_id/token',
    {
      schema: {
        tags: ['conversations'],
        summary: 'Mint a fresh session token (earlier ones stay valid until they expire)',
        params: conversationParams,
        response: { 200: z.object(sessionToken).meta({ id: 'SessionToken' }), ...authErrors },
      },
    },
    async (request) => {
      const { conversation_id } = request.params;
      const tenantId = tenantOf(request);
      const session = await sessions
        .getSession(tenantId, conversation_id, (s) => assertAgentAllowed(request, s.agent_id))
        .catch((err) => {
          throw asConversationError(err, conversation_id);
        });
      return tokens.mint({ conversationId: session.id, tenantId, agentId: session.agent_id });
    },
  );
};

/** A session error reported in the words of the conversation family (`conversation_not_found`). */
export function asConversationError<E>(err: E, conversationId: string): E | AppError {
  if (err instanceof AppError && err.code === 'session_not_found') {
    return new AppError('conversation_not_found', undefined, {
      context: { conversation_id: conversationId },
      cause: err,
    });
  }
  return err;
}
