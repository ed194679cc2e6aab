// Starting a conversation and refreshing its session token (server-side family, API key): the integrator's
// server mints the token its front-end then uses on the public family. A conversation is a session.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  conversationParams,
  conversationStart,
  errorEnvelope,
  sessionCreate,
  sessionTokenSchema,
} from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import type { SessionTokens } from '../../auth/session-tokens.ts';
import { AppError, asConversationError } from '../../errors.ts';
import type { SessionRecord } from '../../store/store.ts';
import { toConversation } from '../../store/views.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keySession } from '../auth/session-target.ts';
import { createsSession, onConversation } from '../server/route-config.ts';

export const conversationsRoutes: FastifyPluginAsyncZod<{
  sessions: SessionService;
  tokens: SessionTokens;
}> = async (app, { sessions, tokens }) => {
  /** The conversation's token names the request's API key, so that it dies with that key. */
  const mintFor = (request: FastifyRequest, session: SessionRecord) => {
    if (!request.apiKey) throw new AppError('unauthorized');
    return tokens.mint({
      conversationId: session.id,
      tenantId: session.tenant_id,
      agentId: session.agent_id,
      keyId: request.apiKey.id,
    });
  };

  app.post(
    '/v1/agents/:agent_id/conversations',
    {
      config: createsSession,
      schema: {
        tags: ['conversations'],
        summary: 'Start a conversation and mint its first session token',
        params: z.object({ agent_id: z.string() }),
        body: sessionCreate,
        response: { 201: conversationStart, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request, reply) => {
      const { agent_id } = request.params;
      assertAgentAllowed(request, agent_id);
      const session = await sessions.createSession(tenantOf(request), agent_id, request.body);
      const token = await mintFor(request, session);
      return reply.code(201).send({ conversation: toConversation(session), ...token });
    },
  );

  app.post(
    '/v1/agents/conversations/:conversation_id/token',
    {
      config: onConversation,
      schema: {
        tags: ['conversations'],
        summary: 'Mint a fresh session token (earlier ones stay valid until they expire)',
        params: conversationParams,
        response: { 200: sessionTokenSchema, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.conversation_id);
      const session = await sessions.getSession(tenantId, sessionId, authorize).catch((err) => {
        throw asConversationError(err, sessionId);
      });
      return mintFor(request, session);
    },
  );
};
