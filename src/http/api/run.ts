// Run an agent once: a new session holding the given messages, and the agent's reply to them. The session is
// persisted and stays active (`persist: false` is accepted and, in this version of the API, still persists:
// docs/internals/decisions.md#run).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, runPaused, runRequest, runResult, turnErrors } from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keyAuthorize } from '../auth/session-target.ts';
import { createsSession } from '../server/route-config.ts';
import { pausedAnswer } from '../turns/send.ts';

export const runRoutes: FastifyPluginAsyncZod<{ sessions: SessionService }> = async (app, { sessions }) => {
  app.post(
    '/v1/agents/:agent_id/run',
    {
      config: createsSession,
      schema: {
        tags: ['sessions'],
        summary: 'Run an agent once on 1 to 10 messages (202 while tool calls wait for decisions)',
        params: z.object({ agent_id: z.string() }),
        body: runRequest,
        response: {
          201: runResult,
          202: runPaused,
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
      const { session_id, agent_message } = result;
      if (agent_message === null) {
        return reply
          .code(202)
          .send({ session_id, ...pausedAnswer(result.turn_id, result.approvals ?? [], 'operator') });
      }
      return reply.code(201).send({ agent_message, session_id });
    },
  );
};
