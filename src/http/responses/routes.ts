// `POST /v1/responses`: a response is a turn of a session (docs/guides/openai-sdks.md).
// `model` names the agent; `conversation` or `previous_response_id` the session to continue, else a new one
// is created. The send is the send routes' own (sessions.send): the same Idempotency-Key, budgets, bounds and
// errors; answered as the response object, or with `stream: true` as the Open Responses event stream.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  idempotencyHeaders,
  openAiErrors,
  type ResponseCreate,
  responseCreate,
  responseCreated,
} from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { ValidationError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keyAuthorize } from '../auth/session-target.ts';
import { createsSession } from '../server/route-config.ts';
import type { LiveTurns } from '../turns/log.ts';
import { streamTurn } from '../turns/stream.ts';
import { continuedSession, continuedSessionOf, responseObject, userContent } from './mapping.ts';
import { answerWithResponses } from './stream.ts';

interface Options {
  store: Store;
  turns: LiveTurns;
  sessions: SessionService;
  pingMs: number;
}

export const responsesRoutes: FastifyPluginAsyncZod<Options> = async (
  app,
  { store, sessions, pingMs, turns },
) => {
  /** The session the request speaks in: the one it continues (of the agent it names), or a new one. */
  const sessionFor = async (request: FastifyRequest, body: ResponseCreate) => {
    const tenantId = tenantOf(request);
    assertAgentAllowed(request, body.model);
    const continued = continuedSession(body);
    if (continued === null) return (await sessions.createSession(tenantId, body.model, {})).id;
    const session = await sessions.getSession(tenantId, continued, keyAuthorize(request));
    if (session.agent_id !== body.model) {
      throw ValidationError.at(
        ['body', 'model'],
        `The conversation is with agent ${session.agent_id}; name it as the model`,
        'value_error',
      );
    }
    return session.id;
  };

  app.post(
    '/v1/responses',
    {
      // Continuing a session, it is served by the session's owner; starting one, where a session can be made.
      config: { ...createsSession, sessionOfBody: continuedSessionOf },
      schema: {
        tags: ['responses'],
        summary: 'Create a response: send the input to the agent named by `model` (Open Responses)',
        headers: idempotencyHeaders,
        body: responseCreate,
        response: { 200: responseCreated, ...openAiErrors },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const { content, fileAt } = userContent(body.input);
      const sessionId = await sessionFor(request, body);
      const tenantId = tenantOf(request);
      const send = (observer?: TurnObserver) =>
        sessions.send(
          tenantId,
          sessionId,
          { content, role: 'user', metadata: body.metadata ?? null },
          {
            authorize: keyAuthorize(request),
            key: request.headers['idempotency-key'],
            operation: observer ? 'stream' : 'plain',
            observer,
            fileAt,
            by: 'operator',
          },
        );
      const facts = {
        sessionId,
        agentId: body.model,
        createdAt: Math.floor(Date.now() / 1000),
        previousResponseId: body.previous_response_id ?? null,
        metadata: body.metadata ?? null,
      };
      if (body.stream) {
        return streamTurn(reply, {
          sessionId,
          run: send,
          store,
          turns,
          log: request.log,
          pingMs,
          view: (m) => m,
          showTools: true,
          allApprovals: true,
          answer: (to, log, after, replayed) =>
            answerWithResponses(to, log, { facts, after, pingMs, replayed }),
        });
      }
      const result = await send();
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(200).send(responseObject({ ...facts, turnId: result.turn_id }, result));
    },
  );
};
