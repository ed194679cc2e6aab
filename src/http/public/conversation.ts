// Inside one conversation, with its session token: read its state and messages, send a message (shared with
// the server-side family in turns/send.ts and turns/chat.ts), leave feedback, emit the inactivity
// messages, ask for a human, terminate. Each call is limited to the token's conversation.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  conversationMessageSchema,
  conversationParams,
  conversationSchema,
  errorEnvelope,
  feedbackRequest,
  feedbackSchema,
  handoffRequest,
  inactivityRequest,
  inactivityResult,
  pageOf,
  pageQuery,
  terminateRequest,
  terminateResult,
} from '#schemas';
import { conversationMessage, type PublicMessage } from '../../actors/public-message.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { AppError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { Store } from '../../store/store.ts';
import { toConversation } from '../../store/views.ts';
import { feedbackEvent } from '../../webhooks/webhook-events.ts';
import { tokenSession } from '../auth/session-target.ts';
import { tokenOf } from '../auth/session-token.ts';
import { onConversation } from '../server/route-config.ts';
import { registerApprovalRoutes } from '../turns/approvals.ts';
import { registerChatRoute } from '../turns/chat.ts';
import { registerEventsRoute } from '../turns/conversation-events.ts';
import type { EventStreams } from '../turns/event-streams.ts';
import type { LiveTurns } from '../turns/log.ts';
import { registerResumeRoute } from '../turns/resume.ts';
import { messagePage, registerSendRoutes, type SendFamily } from '../turns/send.ts';

export const publicConversationRoutes: FastifyPluginAsyncZod<{
  store: Store;
  sessions: SessionService;
  pingMs: number;
  turns: LiveTurns;
  streams: EventStreams;
}> = async (app, options) => {
  const { store, sessions } = options;
  /** The end user sees no metadata, and tool calls only where the agent exposes them. */
  const view = (request: FastifyRequest) => {
    const tools = sessions.exposesTools(tokenOf(request).agentId);
    return { message: (m: PublicMessage) => conversationMessage(m, tools), tools };
  };
  app.get(
    '/:conversation_id',
    {
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: 'Read the conversation',
        params: conversationParams,
        response: { 200: conversationSchema, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      const session = await sessions.getSession(tenantId, sessionId, authorize);
      return toConversation(session, (await sessions.pendingApprovals([sessionId])).get(sessionId));
    },
  );

  app.get(
    '/:conversation_id/messages',
    {
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: 'List the messages of the conversation, oldest first',
        params: conversationParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(conversationMessageSchema), ...authErrors },
      },
    },
    async (request) =>
      messagePage(store, sessions, tokenSession(request), request.query, view(request).message),
  );

  const family: SendFamily = {
    tags: ['public'],
    param: 'conversation_id',
    target: tokenSession,
    endUser: true,
    by: 'user',
    view,
  };
  registerSendRoutes(app, '/:conversation_id/messages', family, options);
  registerChatRoute(app, '/:conversation_id/chat', family, options);
  registerResumeRoute(app, '/:conversation_id', family, options);
  registerApprovalRoutes(app, '/:conversation_id', family, options);
  registerEventsRoute(app, '/:conversation_id', family, options);

  app.post(
    '/:conversation_id/feedback',
    {
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: 'Leave feedback (one per conversation: a second submission replaces the first)',
        params: conversationParams,
        body: feedbackRequest,
        response: { 200: feedbackSchema, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      // Feedback is welcome after the conversation ended, so it needs no actor: a row of its own.
      const session = await sessions.getSession(tenantId, sessionId, authorize);
      const { score, comment, metadata } = request.body;
      const stored = await store.upsertFeedback(
        sessionId,
        { id: newId('fb'), score, comment: comment ?? null, metadata: metadata ?? {} },
        feedbackEvent(session),
      );
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
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: "Store the agent's inactivity warning or final message (final may close the conversation)",
        params: conversationParams,
        body: inactivityRequest,
        response: { 200: inactivityResult, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      const result = await sessions.inactivity(tenantId, sessionId, request.body.step, authorize);
      return { ...result, message: view(request).message(result.message) };
    },
  );

  app.post(
    '/:conversation_id/handoff',
    {
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: "Ask for a human, where the conversation's agent allows it (idempotent)",
        params: conversationParams,
        body: handoffRequest.optional(),
        response: { 200: conversationSchema, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      if (!sessions.agent(tokenOf(request).agentId).handoff.user_can_request) {
        throw new AppError('handoff_not_allowed', undefined, { context: { conversation_id: sessionId } });
      }
      const handoff = { reason: request.body?.reason ?? null, by: 'user' as const };
      const session = await sessions.handoff(tenantId, sessionId, handoff, authorize);
      return toConversation(session, (await sessions.pendingApprovals([sessionId])).get(sessionId));
    },
  );

  app.post(
    '/:conversation_id/terminate',
    {
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: 'Close the conversation (idempotent: a second call answers with the first closing)',
        params: conversationParams,
        body: terminateRequest,
        response: { 200: terminateResult, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      return sessions.terminate(tenantId, sessionId, request.body.reason ?? null, authorize);
    },
  );
};
