// `POST /v1/responses`: a response is a turn of a session (docs/guides/openai-sdks.md).
// `model` names the agent; `conversation` or `previous_response_id` the session to continue, else a new one
// is created. The send is the send routes' own (sessions.send): the same Idempotency-Key, budgets, bounds and
// errors; answered as the response object, or with `stream: true` as the Open Responses event stream. The
// request's functions and instructions go with the turn; an input of answers (function outputs, decisions)
// is the decision operation on the paused turn instead (answers.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  idempotencyHeaders,
  openAiErrors,
  type ResponseCreate,
  responseCreate,
  responseCreated,
} from '#schemas';
import type { Decision } from '../../actors/approvals.ts';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { ValidationError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keyAuthorize } from '../auth/session-target.ts';
import { createsSession } from '../server/route-config.ts';
import type { LiveTurns } from '../turns/log.ts';
import { streamTurn } from '../turns/stream.ts';
import { answeredStep, answeredTurn, answerObject, decisionsOf, turnOutput } from './answers.ts';
import {
  continuedSession,
  continuedSessionOf,
  functionsOf,
  type ResponseFacts,
  requestInput,
  responseObject,
} from './mapping.ts';
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

  /**
   * The answers to a paused response (function outputs, decisions) as Parley's decision operation on the
   * turn `previous_response_id` names; answered with what the turn did after the answered pause.
   */
  const answerPaused = async (
    request: FastifyRequest,
    reply: FastifyReply,
    o: { sessionId: string; facts: Omit<ResponseFacts, 'turnId'>; decisions: Decision[] },
  ) => {
    const { sessionId, facts, decisions } = o;
    const turnId = answeredTurn(facts.previousResponseId);
    const step = await answeredStep(store, sessionId, turnId, decisions);
    // The client's functions: their outputs are the client's own, never told back.
    const functions = new Set([
      ...(await sessions.pausedFunctions(sessionId)),
      ...(facts.tools ?? []).map((t) => t.name),
    ]);
    const decide = (observer?: TurnObserver) =>
      sessions.decide(tenantOf(request), sessionId, turnId, decisions, {
        authorize: keyAuthorize(request),
        by: 'operator',
        ...(observer ? { observer } : {}),
      });
    if ((request.body as ResponseCreate).stream) {
      return streamTurn(reply, {
        sessionId,
        run: decide,
        store,
        turns,
        log: request.log,
        pingMs,
        view: (m) => m,
        showTools: true,
        allApprovals: true,
        answer: (to, log, _after, replayed) =>
          answerWithResponses(to, log, {
            facts,
            after: null,
            pingMs,
            replayed,
            from: { step, functions },
          }),
      });
    }
    const result = await decide();
    const output = await turnOutput(store, sessionId, turnId, step, result.agent_message, functions);
    return reply.code(200).send(answerObject({ ...facts, turnId }, result, output));
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
      const input = requestInput(body.input);
      // Answers continue a paused response: refused before a session could be made for them.
      if ('answers' in input) answeredTurn(body.previous_response_id);
      const sessionId = await sessionFor(request, body);
      const tenantId = tenantOf(request);
      const facts = {
        sessionId,
        agentId: body.model,
        createdAt: Math.floor(Date.now() / 1000),
        previousResponseId: body.previous_response_id ?? null,
        metadata: body.metadata ?? null,
        tools: body.tools,
        instructions: body.instructions,
      };
      if ('answers' in input) {
        return answerPaused(request, reply, { sessionId, facts, decisions: decisionsOf(input.answers) });
      }
      const functions = functionsOf(body.tools);
      const extras = {
        ...(functions.length > 0 ? { functions } : {}),
        ...(body.instructions ? { instructions: body.instructions } : {}),
      };
      const send = (observer?: TurnObserver) =>
        sessions.send(
          tenantId,
          sessionId,
          { content: input.content, role: 'user', metadata: body.metadata ?? null },
          {
            authorize: keyAuthorize(request),
            key: request.headers['idempotency-key'],
            operation: observer ? 'stream' : 'plain',
            observer,
            fileAt: input.fileAt,
            by: 'operator',
            ...(Object.keys(extras).length > 0 ? { extras } : {}),
          },
        );
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
      const turn = { ...facts, turnId: result.turn_id };
      if (result.approvals === null) return reply.code(200).send(responseObject(turn, result));
      const output = await turnOutput(store, sessionId, result.turn_id, 0, null);
      return reply.code(200).send(answerObject(turn, result, output));
    },
  );
};
