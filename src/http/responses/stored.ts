// The routes on one response (docs/guides/openai-sdks.md): read it as stored, cancel it, list its input
// items. A response id names its session, so in a cluster these are served by the session's owner.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  itemList,
  itemListQuery,
  openAiErrors,
  responseParams,
  responseReadQuery,
  responseResumed,
  responseObject as responseSchema,
} from '#schemas';
import { publicMessage } from '../../actors/public-message.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { AppError } from '../../errors.ts';
import type { MessageRecord, SessionRecord, Store } from '../../store/store.ts';
import { tenantOf } from '../auth/api-key.ts';
import { keyAuthorize } from '../auth/session-target.ts';
import type { LiveTurns } from '../turns/log.ts';
import { turnLogOf } from '../turns/resume.ts';
import { turnOutput } from './answers.ts';
import { itemOf, itemPage } from './items.ts';
import { parseResponseId, responseObject } from './mapping.ts';
import { answerWithResponses } from './stream.ts';

interface Options {
  store: Store;
  sessions: SessionService;
  pingMs: number;
  turns: LiveTurns;
}

const responseNotFound = (id: string) =>
  new AppError('response_not_found', `No response ${id}.`, { context: { response_id: id } });

/** Served by the owner of the session the response id names. */
const config = {
  sessionOf: (params: Record<string, string>) => parseResponseId(params.response_id ?? '')?.sessionId ?? null,
};

export const storedResponseRoutes: FastifyPluginAsyncZod<Options> = async (
  app,
  { store, sessions, pingMs, turns },
) => {
  /** The session and the stored messages of the turn a response id names; 404 when there is none. */
  const turnOf = async (request: FastifyRequest, id: string) => {
    const named = parseResponseId(id);
    if (!named) throw responseNotFound(id);
    const session = await sessions
      .getSession(tenantOf(request), named.sessionId, keyAuthorize(request))
      .catch((err: unknown) => {
        throw err instanceof AppError && err.code === 'session_not_found' ? responseNotFound(id) : err;
      });
    const messages = await store.turnMessages(session.id, named.turnId);
    if (messages.length === 0) throw responseNotFound(id);
    return { session, turnId: named.turnId, messages };
  };

  app.get(
    '/v1/responses/:response_id',
    {
      config,
      schema: {
        tags: ['responses'],
        summary: 'Read a response (a turn) as it is stored, or with stream=true resume its event stream',
        params: responseParams,
        querystring: responseReadQuery,
        response: { 200: responseResumed, ...openAiErrors },
      },
    },
    async (request, reply) => {
      const turn = await turnOf(request, request.params.response_id);
      if (!request.query.stream) return storedResponse(store, turn);
      // The stream again, after `starting_after`: followed live while the owner runs the turn, else rebuilt.
      const { session, turnId, messages } = turn;
      const log = await turnLogOf({ store, sessions, turns }, session, turnId);
      if (!log) throw responseNotFound(request.params.response_id);
      return answerWithResponses(reply, log, {
        facts: factsOf(session, messages),
        after: request.query.starting_after ?? null,
        pingMs,
      });
    },
  );

  app.post(
    '/v1/responses/:response_id/cancel',
    {
      config,
      schema: {
        tags: ['responses'],
        summary: 'Cancel a running or paused response (idempotent: a finished one is answered as it is)',
        params: responseParams,
        response: { 200: responseSchema, ...openAiErrors },
      },
    },
    async (request) => {
      const { session, turnId } = await turnOf(request, request.params.response_id);
      await sessions.cancel(session.tenant_id, session.id, turnId, keyAuthorize(request));
      return storedResponse(store, {
        session,
        turnId,
        messages: await store.turnMessages(session.id, turnId),
      });
    },
  );

  app.get(
    '/v1/responses/:response_id/input_items',
    {
      config,
      schema: {
        tags: ['responses'],
        summary: "List a response's input items: the user message it answered",
        params: responseParams,
        querystring: itemListQuery,
        response: { 200: itemList, ...openAiErrors },
      },
    },
    async (request) => {
      const { messages } = await turnOf(request, request.params.response_id);
      return itemPage(messages.filter((m) => m.role === 'user').map(itemOf), request.query);
    },
  );
};

/** A stored turn as a response object: its reply, or in progress (with the calls made so far) while it has none. */
async function storedResponse(
  store: Store,
  { session, turnId, messages }: { session: SessionRecord; turnId: string; messages: MessageRecord[] },
) {
  const reply = messages.findLast((m) => m.role === 'assistant');
  const facts = { ...factsOf(session, messages), turnId };
  if (reply) return responseObject(facts, { agent_message: publicMessage(reply) });
  return responseObject(facts, { agent_message: null }, await turnOutput(store, session.id, turnId, 0, null));
}

/** What a stored turn's response says of itself, beyond its output. */
function factsOf(session: SessionRecord, messages: MessageRecord[]) {
  const [first] = messages;
  return {
    sessionId: session.id,
    agentId: session.agent_id,
    createdAt: Math.floor(Date.parse(first?.created_at ?? session.created_at) / 1000),
    previousResponseId: null,
    metadata: stringMetadata(first?.metadata ?? null),
  };
}

/** The user message's metadata as a response shows it: string values only. */
export function stringMetadata(metadata: Record<string, unknown> | null): Record<string, string> | null {
  if (!metadata) return null;
  return Object.fromEntries(
    Object.entries(metadata).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
