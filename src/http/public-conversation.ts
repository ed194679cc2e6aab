// Inside one conversation, with its session token: read its state and messages, send a message, leave
// feedback, emit the inactivity messages, terminate. Each call is limited to the token's conversation.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionService } from '../actors/session-service.ts';
import { publicMessage } from '../actors/turn.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Store } from '../store/store.ts';
import { conversationParams, conversationSchema, toConversation } from './conversations.ts';
import { turnErrors } from './messages.ts';
import { authErrors, errorEnvelope, metadataSchema, pageOf, pageQuery, text, timestamp } from './schemas.ts';
import {
  agentReply,
  idempotencyHeaders,
  messageRequest,
  messageSchema,
  sessionStatus,
  terminateRequest,
  terminateResult,
} from './session-schemas.ts';
import { tokenOf } from './session-token-auth.ts';
import { sseResponse, streamTurn } from './turn-stream.ts';

const feedbackRequest = z
  .strictObject({
    score: z.number().int().min(0).max(10).meta({ description: 'NPS-style, 0 to 10' }),
    comment: text().max(2000).nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({ id: 'FeedbackCreate' });

const feedbackSchema = z
  .object({
    id: z.string(),
    score: z.number().int(),
    submitted_at: timestamp,
    comment: z.string().nullable(),
  })
  .meta({ id: 'Feedback' });

const inactivityRequest = z
  .strictObject({ step: z.enum(['warning', 'final']) })
  .meta({ id: 'InactivityCreate' });

const inactivityResult = z
  .object({
    step: z.enum(['warning', 'final']),
    message: messageSchema,
    conversation_status: sessionStatus,
  })
  .meta({ id: 'InactivityResult' });

/** An end user must not forge agent turns (DESIGN.md §4). */
function assertUserRole(role: 'user' | 'assistant') {
  if (role !== 'user') {
    throw new AppError(
      'role_not_allowed',
      'Through a session token only the user speaks; send role "user".',
      {
        context: { role },
      },
    );
  }
}

/** The token already names the conversation and its tenant; nothing more to authorize. */
const anyAgent = () => {};

export const publicConversationRoutes: FastifyPluginAsyncZod<{
  store: Store;
  sessions: SessionService;
  pingMs: number;
}> = async (app, { store, sessions, pingMs }) => {
  app.get(
    '/:conversation_id',
    {
      schema: {
        tags: ['public'],
        summary: 'Read the conversation',
        params: conversationParams,
        response: { 200: conversationSchema, ...authErrors },
      },
    },
    async (request) => {
      const token = tokenOf(request);
      return toConversation(await sessions.getSession(token.tenantId, token.conversationId, anyAgent));
    },
  );

  app.get(
    '/:conversation_id/messages',
    {
      schema: {
        tags: ['public'],
        summary: 'List the messages of the conversation, oldest first',
        params: conversationParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(messageSchema), ...authErrors },
      },
    },
    async (request) => {
      const token = tokenOf(request);
      await sessions.getSession(token.tenantId, token.conversationId, anyAgent);
      const page = await store.listMessages(token.tenantId, token.conversationId, request.query);
      if (!page) throw new AppError('session_not_found');
      return { items: page.items.map(publicMessage), next_offset: page.next_offset };
    },
  );

  app.post(
    '/:conversation_id/messages',
    {
      schema: {
        tags: ['public'],
        summary: "Send a message and get the agent's reply",
        params: conversationParams,
        headers: idempotencyHeaders,
        body: messageRequest,
        response: { 201: agentReply, ...turnErrors, ...authErrors },
      },
    },
    async (request, reply) => {
      const token = tokenOf(request);
      assertUserRole(request.body.role);
      const result = await sessions.send(token.tenantId, token.conversationId, request.body, {
        authorize: anyAgent,
        key: request.headers['idempotency-key'],
        operation: 'plain',
        ownFilesOnly: true,
      });
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(201).send({ agent_message: result.agent_message });
    },
  );

  app.post(
    '/:conversation_id/messages/stream',
    {
      schema: {
        tags: ['public'],
        summary: "Send a message and stream the agent's reply as Server-Sent Events",
        params: conversationParams,
        headers: idempotencyHeaders,
        body: messageRequest,
        response: { 200: sseResponse, ...turnErrors, ...authErrors },
      },
    },
    async (request, reply) => {
      const token = tokenOf(request);
      assertUserRole(request.body.role);
      return streamTurn(reply, {
        sessionId: token.conversationId,
        run: (observer) =>
          sessions.send(token.tenantId, token.conversationId, request.body, {
            authorize: anyAgent,
            key: request.headers['idempotency-key'],
            operation: 'stream',
            ownFilesOnly: true,
            observer,
          }),
        turnStart: (turnId) => sessions.turnStart(token.conversationId, turnId),
        log: request.log,
        pingMs,
      });
    },
  );

  app.post(
    '/:conversation_id/feedback',
    {
      schema: {
        tags: ['public'],
        summary: 'Leave feedback (one per conversation: a second submission replaces the first)',
        params: conversationParams,
        body: feedbackRequest,
        response: { 200: feedbackSchema, ...authErrors },
      },
    },
    async (request) => {
      const token = tokenOf(request);
      // Feedback is welcome after the conversation ended, so it needs no actor: a row of its own.
      await sessions.getSession(token.tenantId, token.conversationId, anyAgent);
      const { score, comment, metadata } = request.body;
      const stored = await store.upsertFeedback(token.conversationId, {
        id: newId('fb'),
        score,
        comment: comment ?? null,
        metadata: metadata ?? {},
      });
      return {
        id: stored.id,
        score: stored.score,
        submitted_at: stored.submitted_at,
        comment: stored.comment,
      };
    },
  );

  app.post(
    '/:conversation_id/inactivity',
    {
      schema: {
        tags: ['public'],
        summary: "Store the agent's inactivity warning or final message (final may close the conversation)",
        params: conversationParams,
        body: inactivityRequest,
        response: { 200: inactivityResult, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const token = tokenOf(request);
      return sessions.inactivity(token.tenantId, token.conversationId, request.body.step, anyAgent);
    },
  );

  app.post(
    '/:conversation_id/terminate',
    {
      schema: {
        tags: ['public'],
        summary: 'Close the conversation (idempotent: a second call answers with the first closing)',
        params: conversationParams,
        body: terminateRequest,
        response: { 200: terminateResult, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const token = tokenOf(request);
      return sessions.terminate(token.tenantId, token.conversationId, request.body.reason ?? null, anyAgent);
    },
  );
};
