// What the message routes of both families share, parameterised by the family: sending a message and getting
// the agent's reply, as one JSON answer (201) or as Server-Sent Events, and a page of a session's messages.
// The families differ in how a request names its session and in whether the sender is the end user (who sees
// messages without their metadata). Idempotency-Key is honoured
// (docs/internals/decisions.md#idempotency-key); a replayed answer says so in Idempotent-Replayed.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  conversationPausedReply,
  conversationSendReply,
  idempotencyHeaders,
  type MessageRequest,
  messageRequest,
  pausedReply,
  sendReply,
  sseResponse,
  turnErrors,
} from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import { type MessageView, type PublicMessage, publicMessage } from '../../actors/public-message.ts';
import type { SendResult, SessionService } from '../../actors/session-service.ts';
import type { Approval } from '../../actors/step-approvals.ts';
import { AppError, sessionNotFound, ValidationError } from '../../errors.ts';
import type { Approver } from '../../machines/session.ts';
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
  /**
   * Who the caller is to approvals (docs/internals/decisions.md#approvals): the end user (`user`, sees and
   * decides only its own calls) or the integrator (`operator`, every call).
   */
  by: Approver;
}

/** The 202 answer of a turn that waits for decisions, showing the approvals the caller may decide. */
export const pausedAnswer = (turnId: string, approvals: readonly Approval[], by: Approver) => ({
  agent_message: null,
  turn: {
    id: turnId,
    status: 'awaiting_approval' as const,
    approvals: by === 'operator' ? [...approvals] : approvals.filter((a) => a.approver === 'user'),
  },
});

/** A send's answer: 201 with the reply, or 202 while the turn waits for decisions. */
export function turnAnswer(result: SendResult, family: SendFamily, request: FastifyRequest) {
  if (result.agent_message === null) {
    return { status: 202 as const, body: pausedAnswer(result.turn_id, result.approvals ?? [], family.by) };
  }
  return {
    status: 201 as const,
    body: { agent_message: family.view(request).message(result.agent_message) },
  };
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
    if (body.author && body.role !== 'assistant')
      throw ValidationError.at(
        ['body', 'author'],
        'Only an assistant message (an operator) has an author.',
        'value_error',
      );
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
      by: family.by,
    });

  app.post(
    path,
    options(
      "Send a message and get the agent's reply (202 while tool calls wait for decisions; no reply while people handle the session)",
      {
        201: family.endUser ? conversationSendReply : sendReply,
        202: family.endUser ? conversationPausedReply : pausedReply,
      },
    ),
    async (request, reply) => {
      const target = targetOf(request, request.params, request.body);
      const result = await send(target, request.body, request.headers['idempotency-key']);
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      // People handle the session: the message is stored, and no model answers it.
      if (result.handled_by === 'humans')
        return reply.code(201).send({ agent_message: null, handled_by: 'humans' });
      const { status, body } = turnAnswer(result, family, request);
      return reply.code(status).send(body);
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
        allApprovals: family.by === 'operator',
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
