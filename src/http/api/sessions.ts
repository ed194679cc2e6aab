// Sessions of the server-side family: create one bound to an agent, read, list, terminate. A key scoped to
// some agents sees only their sessions; a session of another tenant does not exist for it (404).
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  errorEnvelope,
  handbackRequest,
  handoffRequest,
  pageOf,
  sessionCreate,
  sessionListQuery,
  sessionParams,
  sessionSchema,
  terminateRequest,
  terminateResult,
} from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import type { Handoff } from '../../machines/session.ts';
import type { Store } from '../../store/store.ts';
import { toSession } from '../../store/views.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keySession } from '../auth/session-target.ts';
import { createsSession, onSession } from '../server/route-config.ts';
import { withUsage } from './usage.ts';

export const sessionsRoutes: FastifyPluginAsyncZod<{ store: Store; sessions: SessionService }> = async (
  app,
  { store, sessions },
) => {
  app.post(
    '/v1/agents/:agent_id/sessions',
    {
      config: createsSession,
      schema: {
        tags: ['sessions'],
        summary: 'Create a session bound to an agent',
        params: z.object({ agent_id: z.string() }),
        body: sessionCreate,
        response: { 201: sessionSchema, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request, reply) => {
      assertAgentAllowed(request, request.params.agent_id);
      const session = await sessions.createSession(tenantOf(request), request.params.agent_id, request.body);
      return reply.code(201).send(withUsage([toSession(session)], new Map())[0]);
    },
  );

  app.get(
    '/v1/agents/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List sessions, newest first',
        querystring: sessionListQuery,
        response: { 200: pageOf(sessionSchema), ...authErrors },
      },
    },
    async (request) => {
      const { status, agent_id, user_id, limit, offset } = request.query;
      const agents = request.apiKey?.agents ?? [];
      const page = await store.listSessions(
        tenantOf(request),
        { status, agent_id, user_id, ...(agents.includes('*') ? {} : { agent_ids: agents }) },
        { limit, offset },
      );
      const ids = page.items.map((s) => s.id);
      const pending = await sessions.pendingApprovals(ids);
      const usage = await store.sessionUsage(tenantOf(request), ids);
      const items = withUsage(
        page.items.map((s) => toSession(s, pending.get(s.id))),
        usage,
      );
      return { items, next_offset: page.next_offset };
    },
  );

  app.get(
    '/v1/agents/sessions/:session_id',
    {
      config: onSession,
      schema: {
        tags: ['sessions'],
        summary: 'Read a session',
        params: sessionParams,
        response: { 200: sessionSchema, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.session_id);
      const session = await sessions.getSession(tenantId, sessionId, authorize);
      const pending = (await sessions.pendingApprovals([sessionId])).get(sessionId);
      return withUsage([toSession(session, pending)], await store.sessionUsage(tenantId, [sessionId]))[0];
    },
  );

  /** What the handoff and handback routes declare, beside their bodies. */
  const handoverSchema = (summary: string) => ({
    tags: ['sessions'],
    summary,
    params: sessionParams,
    response: { 200: sessionSchema, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
  });
  /** Hands the session to people (`handoff`) or back (null), answering with the session as it is then. */
  const handOver = async (
    request: FastifyRequest<{ Params: { session_id: string } }>,
    handoff: Omit<Handoff, 'requested_at'> | null,
  ) => {
    const { tenantId, sessionId, authorize } = keySession(request, request.params.session_id);
    const session = await sessions.handoff(tenantId, sessionId, handoff, authorize);
    return toSession(session, (await sessions.pendingApprovals([sessionId])).get(sessionId));
  };

  app.post(
    '/v1/agents/sessions/:session_id/handoff',
    {
      config: onSession,
      schema: {
        ...handoverSchema('Hand the session to people: sends are stored and no model answers (idempotent)'),
        body: handoffRequest.optional(),
      },
    },
    (request) => handOver(request, { reason: request.body?.reason ?? null, by: 'integrator' }),
  );

  app.post(
    '/v1/agents/sessions/:session_id/handback',
    {
      config: onSession,
      schema: { ...handoverSchema('Hand the session back to the agent (idempotent)'), body: handbackRequest },
    },
    (request) => handOver(request, null),
  );

  app.post(
    '/v1/agents/sessions/:session_id/terminate',
    {
      config: onSession,
      schema: {
        tags: ['sessions'],
        summary: 'Close a session (idempotent: a second call answers with the first closing)',
        params: sessionParams,
        body: terminateRequest,
        response: { 200: terminateResult, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.session_id);
      return sessions.terminate(tenantId, sessionId, request.body.reason ?? null, authorize);
    },
  );
};
