// `POST /v1/responses` and `GET /v1/responses/{id}`: a response is a turn of a session (docs/guides/openai-sdks.md).
// `model` names the agent; `conversation` or `previous_response_id` the session to continue, else a new one
// is created. The send is the send routes' own (sessions.send): the same Idempotency-Key, budgets, bounds and
// errors; answered as the response object, or with `stream: true` as the Open Responses event stream.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  idempotencyHeaders,
  openAiErrors,
  type ResponseCreate,
  responseCreate,
  responseCreated,
  responseObject as responseSchema,
} from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import { publicMessage } from '../../actors/public-message.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { AppError, ValidationError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keyAuthorize } from '../auth/session-target.ts';
import { createsSession } from '../server/route-config.ts';
import { continuedSession, parseResponseId, responseObject, userContent } from './mapping.ts';
import { streamResponse } from './stream.ts';

interface Options {
  store: Store;
  sessions: SessionService;
  pingMs: number;
}

const responseNotFound = (id: string) =>
  new AppError('response_not_found', `No response ${id}.`, { context: { response_id: id } });

export const responsesRoutes: FastifyPluginAsyncZod<Options> = async (app, { store, sessions, pingMs }) => {
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
      config: createsSession,
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
      if (body.stream) return streamResponse(reply, { facts, run: send, log: request.log, pingMs });
      const result = await send();
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(200).send(responseObject({ ...facts, turnId: result.turn_id }, result));
    },
  );

  app.get(
    '/v1/responses/:response_id',
    {
      schema: {
        tags: ['responses'],
        summary: 'Read a response (a turn) as it is stored',
        params: z.object({ response_id: z.string().max(420) }),
        response: { 200: responseSchema, ...openAiErrors },
      },
    },
    async (request) => {
      const { response_id: id } = request.params;
      const named = parseResponseId(id);
      if (!named) throw responseNotFound(id);
      const session = await sessions
        .getSession(tenantOf(request), named.sessionId, keyAuthorize(request))
        .catch((err: unknown) => {
          throw err instanceof AppError && err.code === 'session_not_found' ? responseNotFound(id) : err;
        });
      const messages = await store.turnMessages(session.id, named.turnId);
      const [first] = messages;
      if (!first) throw responseNotFound(id);
      const reply = messages.findLast((m) => m.role === 'assistant');
      return responseObject(
        {
          sessionId: session.id,
          turnId: named.turnId,
          agentId: session.agent_id,
          createdAt: Math.floor(Date.parse(first.created_at) / 1000),
          previousResponseId: null,
          metadata: stringMetadata(first.metadata),
        },
        { agent_message: reply ? publicMessage(reply) : null },
      );
    },
  );
};

/** The user message's metadata as a response shows it: string values only. */
function stringMetadata(metadata: Record<string, unknown> | null): Record<string, string> | null {
  if (!metadata) return null;
  return Object.fromEntries(
    Object.entries(metadata).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
