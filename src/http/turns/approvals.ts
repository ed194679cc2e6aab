// Deciding and cancelling a turn, for both families (docs/guides/approvals.md): `POST <session>/turns/{turn_id}
// /approvals` takes decisions on the calls a paused turn waits for and answers like a send (201 with the reply,
// 202 while calls still wait; with `Accept: text/event-stream`, the turn's events after the pause it decided),
// and `POST <session>/turns/{turn_id}/cancel` ends a running or paused turn and answers with the turn as it
// is once that is committed. Both are routed to the session's owner like every session route.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  agentReply,
  approvalsRequest,
  authErrors,
  cancelResult,
  conversationCancelResult,
  conversationPausedReply,
  conversationReply,
  pausedReply,
  sseResponse,
  turnErrors,
} from '#schemas';
import type { DecideResult } from '../../actors/approvals.ts';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SendResult } from '../../actors/session-service.ts';
import { pauseSeq } from './events.ts';
import type { TurnLog, Visibility } from './log.ts';
import { type SendFamily, type SendOptions, turnAnswer } from './send.ts';
import { streamTurn } from './stream.ts';

type RouteScope = Parameters<FastifyPluginAsyncZod>[0];

export function registerApprovalRoutes(
  app: RouteScope,
  sessionPath: string,
  family: SendFamily,
  { store, sessions, pingMs, turns }: SendOptions,
): void {
  const params = z.object({ [family.param]: z.string(), turn_id: z.string() });
  const config = { session: family.param };
  const visibility = (request: FastifyRequest): Visibility => ({
    showTools: family.view(request).tools,
    allApprovals: family.by === 'operator',
  });

  app.post(
    `${sessionPath}/turns/:turn_id/approvals`,
    {
      config,
      schema: {
        tags: family.tags,
        summary:
          'Approve or deny tool calls the turn waits for; answers like a send (with Accept: text/event-stream, as its events)',
        params,
        body: approvalsRequest,
        response: {
          200: sseResponse,
          201: family.endUser ? conversationReply : agentReply,
          202: family.endUser ? conversationPausedReply : pausedReply,
          ...turnErrors,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const target = family.target(request, request.params[family.param] ?? '');
      const turnId = request.params.turn_id ?? '';
      const decisions = request.body.decisions.map((d) => ({
        call_id: d.call_id,
        approved: d.approved,
        reason: d.reason ?? null,
      }));
      const decide = (observer?: TurnObserver) =>
        sessions.decide(target.tenantId, target.sessionId, turnId, decisions, {
          authorize: target.authorize,
          by: family.by,
          ...(observer ? { observer } : {}),
        });
      const v = visibility(request);
      if (request.headers.accept?.includes('text/event-stream')) {
        return streamTurn<SendResult & DecideResult>(reply, {
          sessionId: target.sessionId,
          run: decide,
          store,
          turns,
          log: request.log,
          pingMs,
          view: family.view(request).message,
          ...v,
          startAfter: (log, result) => afterPause(log, v, result),
        });
      }
      const result = await decide();
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      const { status, body } = turnAnswer(result, family, request);
      return reply.code(status).send(body);
    },
  );

  app.post(
    `${sessionPath}/turns/:turn_id/cancel`,
    {
      config,
      schema: {
        tags: family.tags,
        summary: 'Cancel a running or paused turn (idempotent: a finished turn is answered as it is)',
        params,
        response: {
          200: family.endUser ? conversationCancelResult : cancelResult,
          ...turnErrors,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const target = family.target(request, request.params[family.param] ?? '');
      const turnId = request.params.turn_id ?? '';
      const result = await sessions.cancel(target.tenantId, target.sessionId, turnId, target.authorize);
      const message = result.agent_message && family.view(request).message(result.agent_message);
      return { agent_message: message, turn: { id: result.turn_id, status: result.status, approvals: [] } };
    },
  );
}

/**
 * Where a decision's stream starts: after the pause it decided. Going on now, that is the last pause of the
 * turn so far; otherwise the pause of the decided step, or that pause itself again when the step still waits
 * (its event then lists the calls still waiting).
 */
function afterPause(log: TurnLog, v: Visibility, result: DecideResult | null): number | null {
  if (result === null) return pauseSeq(log, v);
  const seq = pauseSeq(log, v, result.step);
  if (seq === null) return null;
  const last = log.items.findLast((item) => 'pause' in item);
  const waits =
    log.end !== undefined &&
    'paused' in log.end &&
    last &&
    'pause' in last &&
    last.pause.step === result.step;
  return waits ? seq - 1 : seq;
}
