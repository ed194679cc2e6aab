// What the message routes of both families share, parameterised by the family: sending a message and getting
// the agent's reply, as one JSON answer (201) or as Server-Sent Events, and a page of a session's messages.
// The families differ in how a request names its session and in whether the sender is the end user (who sees
// messages without their metadata). Idempotency-Key is honoured
// (docs/internals/decisions.md#idempotency-key); a replayed answer says so in Idempotent-Replayed.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  agentReply,
  authErrors,
  conversationReply,
  idempotencyHeaders,
  type MessageRequest,
  messageRequest,
  sseResponse,
  turnErrors,
} from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import { type MessageView, type PublicMessage, publicMessage } from '../../actors/public-message.ts';
import type { SessionService } from '../../actors/session-service.ts';
import { AppError, sessionNotFound } from '../../errors.ts';
import type { PageRequest, Store } from '../../store/store.ts';
import type { SessionTarget } from '../auth/session-target.ts';
import type { LiveTurns } from './log.ts';
import { streamTurn } from './stream.ts';

type RouteScope = Parameters<FastifyPluginAsyncZod>[0];

/** What differs between the families' send routes. */
export interface SendFamily {
  tags: string[];
  /** The path parameter naming the session (declared for routing to its owner, too). */
  param: 'session_id' | 'conversation_id';
  /** The session the request acts on, given the path's id. */
  target(request: FastifyRequest, id: string): SessionTarget;
  /** How the request's caller sees messages, and whether it sees tool calls (SSE tool events). */
  view(request: FastifyRequest): { message: MessageView; tools: boolean };
  /**
   * Sent with a session token: only the user speaks (docs/internals/decisions.md#who-may-speak), and content
   * blocks may name only files uploaded in this conversation; the answers show messages without their
   * metadata.
   */
  endUser: boolean;
}

export interface SendOptions {
  store: Store;
  sessions: SessionService;
  pingMs: number;
  /** This process's streamed turns, which a dropped client may resume. */
  turns: LiveTurns;
}

/** Registers `POST <path>` (the reply as JSON) and `POST <path>/stream` (the reply as events) in `app`. */
export function registerSendRoutes(
  app: RouteScope,
  path: string,
  family: SendFamily,
  { store, sessions, pingMs, turns }: SendOptions,
): void {
  const params = z.object({ [family.param]: z.string() });
  const options = <A extends object>(summary: string, answer: A) => ({
    config: { session: family.param },
    schema: {
      tags: family.tags,
      summary,
      params,
      headers: idempotencyHeaders,
      body: messageRequest,
      response: { ...answer, ...turnErrors, ...authErrors },
    },
  });
  /** The session the request names, once it is known the message may be sent at all. */
  const targetOf = (request: FastifyRequest, path: Record<string, string>, body: MessageRequest) => {
    const target = family.target(request, path[family.param]);
    if (family.endUser) assertUserRole(body.role);
    return target;
  };
  const send = (
    target: SessionTarget,
    body: MessageRequest,
    key: string | undefined,
    stream?: { observer: TurnObserver },
  ) =>
    sessions.send(target.tenantId, target.sessionId, body, {
      authorize: target.authorize,
      key,
      operation: stream ? 'stream' : 'plain',
      ownFilesOnly: family.endUser,
      observer: stream?.observer,
    });

  app.post(
    path,
    options("Send a message and get the agent's reply", {
      201: family.endUser ? conversationReply : agentReply,
    }),
    async (request, reply) => {
      const target = targetOf(request, request.params, request.body);
      const result = await send(target, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(201).send({ agent_message: family.view(request).message(result.agent_message) });
    },
  );

  app.post(
    `${path}/stream`,
    options("Send a message and stream the agent's reply as Server-Sent Events", { 200: sseResponse }),
    async (request, reply) => {
      const target = targetOf(request, request.params, request.body);
      const view = family.view(request);
      return streamTurn(reply, {
        sessionId: target.sessionId,
        run: (observer) => send(target, request.body, request.headers['idempotency-key'], { observer }),
        store,
        turns,
        log: request.log,
        pingMs,
        view: view.message,
        showTools: view.tools,
      });
    },
  );
}

function assertUserRole(role: MessageRequest['role']) {
  if (role !== 'user') {
    throw new AppError(
      'role_not_allowed',
      'Through a session token only the user speaks; send role "user".',
      { context: { role } },
    );
  }
}

/** A page of the session's messages, oldest first, once the caller may read the session. */
export async function messagePage<M>(
  store: Store,
  sessions: SessionService,
  target: SessionTarget,
  page: PageRequest,
  view: (m: PublicMessage) => M,
) {
  await sessions.getSession(target.tenantId, target.sessionId, target.authorize);
  const messages = await store.listMessages(target.tenantId, target.sessionId, page);
  if (!messages) throw sessionNotFound(target.sessionId);
  return { items: messages.items.map((m) => view(publicMessage(m))), next_offset: messages.next_offset };
}
