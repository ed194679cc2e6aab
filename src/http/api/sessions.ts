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
  sessionCreate,
  sessionListQuery,
  sessionPage,
  sessionParams,
  sessionSchema,
  terminateRequest,
  terminateResult,
} from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import { ValidationError } from '../../errors.ts';
import type { Handoff } from '../../machines/session.ts';
import { decodeSessionCursor } from '../../store/session-list.ts';
import type { SessionRecord, Store } from '../../store/store.ts';
import { feedbackView, toSession } from '../../store/views.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keySession } from '../auth/session-target.ts';
import { createsSession, onSession } from '../server/route-config.ts';
import { withUsage } from './usage.ts';

export const sessionsRoutes: FastifyPluginAsyncZod<{ store: Store; sessions: SessionService }> = async (
  app,
  { store, sessions },
) => {
  /** The Session records as a read or a list shows them: with their pending approvals, usage and feedback. */
  const fullViews = async (tenantId: string, records: SessionRecord[]) => {
    const ids = records.map((s) => s.id);
    const [pending, usage, feedback] = await Promise.all([
      sessions.pendingApprovals(ids),
      store.sessionUsage(tenantId, ids),
      store.feedbackOf(ids),
    ]);
    const byId = new Map(feedback.map((f) => [f.session_id, feedbackView(f)]));
    return withUsage(
      records.map((s) => toSession(s, pending.get(s.id))),
      usage,
    ).map((s) => ({ ...s, feedback: byId.get(s.id) ?? null }));
  };

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
      return reply.code(201).send({ ...withUsage([toSession(session)], new Map())[0], feedback: null });
    },
  );

  app.get(
    '/v1/agents/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List sessions, newest first',
        querystring: sessionListQuery,
        response: { 200: sessionPage, ...authErrors },
      },
    },
    async (request) => {
      const { cursor, limit, offset, ...filter } = request.query;
      const after = cursor === undefined ? undefined : decodeSessionCursor(cursor);
      if (after === null) {
        throw ValidationError.at(
          ['query', 'cursor'],
          'Not a cursor of this list: pass a next_cursor as it came',
          'value_error',
        );
      }
      if (after && offset > 0) {
        throw ValidationError.at(['query', 'offset'], 'Page by cursor or by offset, not both', 'value_error');
      }
      const agents = request.apiKey?.agents ?? [];
      const page = await store.listSessions(
        tenantOf(request),
        { ...filter, ...(agents.includes('*') ? {} : { agent_ids: agents }) },
        { limit, offset, ...(after ? { after } : {}) },
      );
      const items = await fullViews(tenantOf(request), page.items);
      return { items, next_offset: page.next_offset, next_cursor: page.next_cursor };
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
      const [view] = await fullViews(tenantId, [await sessions.getSession(tenantId, sessionId, authorize)]);
      return view;
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
