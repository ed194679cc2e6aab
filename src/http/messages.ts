// Messages of a session (server-side family): send one and get the agent's reply, read one, list them.
// Sending honours Idempotency-Key (DESIGN.md §5); a replayed answer says so in Idempotent-Replayed.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionService } from '../actors/session-service.ts';
import { publicMessage } from '../actors/turn.ts';
import { AppError } from '../errors.ts';
import type { Store } from '../store/store.ts';
import { assertAgentAllowed, tenantOf } from './api-key-auth.ts';
import { authErrors, errorEnvelope, pageOf, pageQuery } from './schemas.ts';
import {
  agentReply,
  idempotencyHeaders,
  messageRequest,
  messageSchema,
  sessionParams,
} from './session-schemas.ts';
import { sseResponse, streamTurn } from './turn-stream.ts';

/** Errors a turn may end in, besides those of every API-key route. */
export const turnErrors = {
  409: errorEnvelope,
  502: errorEnvelope,
  503: errorEnvelope,
  504: errorEnvelope,
} as const;

export const messagesRoutes: FastifyPluginAsyncZod<{
  store: Store;
  sessions: SessionService;
  pingMs: number;
}> = async (app, { store, sessions, pingMs }) => {
  app.post(
    '/v1/agents/sessions/:session_id/messages',
    {
      schema: {
        tags: ['messages'],
        summary: "Send a message and get the agent's reply",
        params: sessionParams,
        headers: idempotencyHeaders,
        body: messageRequest,
        response: { 201: agentReply, ...turnErrors, ...authErrors },
      },
    },
    async (request, reply) => {
      const result = await sessions.send(tenantOf(request), request.params.session_id, request.body, {
        authorize: (s) => assertAgentAllowed(request, s.agent_id),
        key: request.headers['idempotency-key'],
        operation: 'plain',
      });
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(201).send({ agent_message: result.agent_message });
    },
  );

  app.post(
    '/v1/agents/sessions/:session_id/messages/stream',
    {
      schema: {
        tags: ['messages'],
        summary: "Send a message and stream the agent's reply as Server-Sent Events",
        params: sessionParams,
        headers: idempotencyHeaders,
        body: messageRequest,
        response: { 200: sseResponse, ...turnErrors, ...authErrors },
      },
    },
    async (request, reply) => {
      const { session_id } = request.params;
      return streamTurn(reply, {
        sessionId: session_id,
        run: (observer) =>
          sessions.send(tenantOf(request), session_id, request.body, {
            authorize: (s) => assertAgentAllowed(request, s.agent_id),
            key: request.headers['idempotency-key'],
            operation: 'stream',
            observer,
          }),
        turnStart: (turnId) => sessions.turnStart(session_id, turnId),
        log: request.log,
        pingMs,
      });
    },
  );

  app.get(
    '/v1/agents/sessions/:session_id/messages',
    {
      schema: {
        tags: ['messages'],
        summary: 'List the messages of a session, oldest first',
        params: sessionParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(messageSchema), ...authErrors },
      },
    },
    async (request) => {
      const { session_id } = request.params;
      await sessions.getSession(tenantOf(request), session_id, (s) =>
        assertAgentAllowed(request, s.agent_id),
      );
      const page = await store.listMessages(tenantOf(request), session_id, request.query);
      if (!page) throw new AppError('session_not_found', undefined, { context: { session_id } });
      return { items: page.items.map(publicMessage), next_offset: page.next_offset };
    },
  );

  app.get(
    '/v1/agents/sessions/:session_id/messages/:message_id',
    {
      schema: {
        tags: ['messages'],
        summary: 'Read a message',
        params: z.object({ session_id: z.string(), message_id: z.string() }),
        response: { 200: messageSchema, ...authErrors },
      },
    },
    async (request) => {
      const { session_id, message_id } = request.params;
      await sessions.getSession(tenantOf(request), session_id, (s) =>
        assertAgentAllowed(request, s.agent_id),
      );
      const message = await store.getMessage(tenantOf(request), session_id, message_id);
      if (!message)
        throw new AppError('message_not_found', undefined, { context: { session_id, message_id } });
      return publicMessage(message);
    },
  );
};
