// Messages of a session (server-side family): send one and get the agent's reply (plain or streamed, shared
// with the public family in turns/send.ts; or as an AI SDK chat, turns/chat.ts), list them, read one.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, messageSchema, pageOf, pageQuery, sessionParams } from '#schemas';
import { publicMessage } from '../../actors/public-message.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { AppError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { keySession } from '../auth/session-target.ts';
import { onSession } from '../server/route-config.ts';
import { registerApprovalRoutes } from '../turns/approvals.ts';
import { registerChatRoute } from '../turns/chat.ts';
import { registerEventsRoute } from '../turns/conversation-events.ts';
import type { EventStreams } from '../turns/event-streams.ts';
import type { LiveTurns } from '../turns/log.ts';
import { registerResumeRoute } from '../turns/resume.ts';
import { messagePage, registerSendRoutes, type SendFamily } from '../turns/send.ts';

export const messagesRoutes: FastifyPluginAsyncZod<{
  store: Store;
  sessions: SessionService;
  pingMs: number;
  turns: LiveTurns;
  streams: EventStreams;
}> = async (app, options) => {
  const { store, sessions } = options;
  const family: SendFamily = {
    tags: ['messages'],
    param: 'session_id',
    target: keySession,
    endUser: false,
    by: 'operator',
    view: () => ({ message: (m) => m, tools: true }),
  };
  registerSendRoutes(app, '/v1/agents/sessions/:session_id/messages', family, options);
  registerChatRoute(app, '/v1/agents/sessions/:session_id/chat', family, options);
  registerResumeRoute(app, '/v1/agents/sessions/:session_id', family, options);
  registerApprovalRoutes(app, '/v1/agents/sessions/:session_id', family, options);
  registerEventsRoute(app, '/v1/agents/sessions/:session_id', family, options);

  app.get(
    '/v1/agents/sessions/:session_id/messages',
    {
      config: onSession,
      schema: {
        tags: ['messages'],
        summary: 'List the messages of a session, oldest first',
        params: sessionParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(messageSchema), ...authErrors },
      },
    },
    async (request) =>
      messagePage(store, sessions, keySession(request, request.params.session_id), request.query, (m) => m),
  );

  app.get(
    '/v1/agents/sessions/:session_id/messages/:message_id',
    {
      config: onSession,
      schema: {
        tags: ['messages'],
        summary: 'Read a message',
        params: z.object({ session_id: z.string(), message_id: z.string() }),
        response: { 200: messageSchema, ...authErrors },
      },
    },
    async (request) => {
      const { session_id, message_id } = request.params;
      const { tenantId, authorize } = keySession(request, session_id);
      await sessions.getSession(tenantId, session_id, authorize);
      const message = await store.getMessage(tenantId, session_id, message_id);
      if (!message)
        throw new AppError('message_not_found', undefined, { context: { session_id, message_id } });
      return publicMessage(message);
    },
  );
};
