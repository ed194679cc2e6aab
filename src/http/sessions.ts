// Sessions of the server-side family: create one bound to an agent, read, list, terminate. A key scoped to
// some agents sees only their sessions; a session of another tenant does not exist for it (404).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionService } from '../actors/session-service.ts';
import type { SessionRecord, Store } from '../store/store.ts';
import { assertAgentAllowed, tenantOf } from './api-key-auth.ts';
import { authErrors, errorEnvelope, pageOf, pageQuery } from './schemas.ts';
import {
  sessionCreate,
  sessionParams,
  sessionSchema,
  sessionStatus,
  terminateRequest,
  terminateResult,
} from './session-schemas.ts';

/** The Session resource; the store's record also carries routing fields that stay inside. */
export const toSession = ({ tenant_id: _t, shard: _s, expires_at: _e, ...session }: SessionRecord) => session;

export const sessionsRoutes: FastifyPluginAsyncZod<{ store: Store; sessions: SessionService }> = async (
  app,
  { store, sessions },
) => {
  app.post(
    '/v1/agents/:agent_id/sessions',
    {
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
      return reply.code(201).send(toSession(session));
    },
  );

  app.get(
    '/v1/agents/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List sessions, newest first',
        querystring: z.object({
          status: sessionStatus.optional(),
          agent_id: z.string().max(64).optional(),
          user_id: z.string().max(200).optional(),
          ...pageQuery,
        }),
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
      return { items: page.items.map(toSession), next_offset: page.next_offset };
    },
  );

  app.get(
    '/v1/agents/sessions/:session_id',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Read a session',
        params: sessionParams,
        response: { 200: sessionSchema, ...authErrors },
      },
    },
    async (request) => {
      const session = await sessions.getSession(tenantOf(request), request.params.session_id, (s) =>
        assertAgentAllowed(request, s.agent_id),
      );
      return toSession(session);
    },
  );

  app.post(
    '/v1/agents/sessions/:session_id/terminate',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Close a session (idempotent: a second call answers with the first closing)',
        params: sessionParams,
        body: terminateRequest,
        response: { 200: terminateResult, 409: errorEnvelope, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request) =>
      sessions.terminate(tenantOf(request), request.params.session_id, request.body.reason ?? null, (s) =>
        assertAgentAllowed(request, s.agent_id),
      ),
  );
};
