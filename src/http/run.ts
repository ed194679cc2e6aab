// Run an agent once: a new session holding the given messages, and the agent's reply to them. The session
// is persisted and stays active (SPEC.md: `persist: false` is accepted and, in v1, still persists).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionService } from '../actors/session-service.ts';
import { assertAgentAllowed, tenantOf } from './api-key-auth.ts';
import { messageRequest, messageSchema, turnErrors } from './message-schemas.ts';
import { createsSession } from './route-config.ts';
import { authErrors, metadataSchema } from './schemas.ts';
import { contextSchema, userLookup } from './session-schemas.ts';
import { keyAuthorize } from './session-target.ts';

export const runRequest = z
  .strictObject({
    messages: z.array(messageRequest).min(1).max(10),
    user: userLookup.nullable().optional(),
    context: contextSchema.nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
    persist: z.boolean().default(true),
  })
  .meta({ id: 'RunRequest' });

export const runResult = z
  .object({ agent_message: messageSchema, session_id: z.string() })
  .meta({ id: 'RunResult' });

export const runRoutes: FastifyPluginAsyncZod<{ sessions: SessionService }> = async (app, { sessions }) => {
  app.post(
    '/v1/agents/:agent_id/run',
    {
      config: createsSession,
      schema: {
        tags: ['sessions'],
        summary: 'Run an agent once on 1 to 10 messages',
        params: z.object({ agent_id: z.string() }),
        body: runRequest,
        response: {
          201: runResult,
          ...turnErrors,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      assertAgentAllowed(request, request.params.agent_id);
      const result = await sessions.run(
        tenantOf(request),
        request.params.agent_id,
        request.body,
        keyAuthorize(request),
      );
      return reply.code(201).send({ agent_message: result.agent_message, session_id: result.session_id });
    },
  );
};
