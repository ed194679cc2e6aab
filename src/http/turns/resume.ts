// Resuming a turn's stream (docs/guides/streaming.md#resuming-a-dropped-stream): `GET
// <session>/turns/{turn_id}/events` sends the events after `Last-Event-ID` (or `?after=`, the same full id
// `<turn_id>:<seq>`): followed live while this process runs the turn, replayed from the store once it is
// finished. Routed to the session's owner like every session route, so it works through any process and after
// the session moved: a turn whose process died is stored without its reply, and its stream ends in
// turn_interrupted.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, sseResponse } from '#schemas';
import { AppError, ValidationError } from '../../errors.ts';
import type { SessionRecord } from '../../store/store.ts';
import type { TurnLog } from './log.ts';
import { storedTurn } from './replay.ts';
import type { SendFamily, SendOptions } from './send.ts';
import { answerWithLog } from './stream.ts';

type RouteScope = Parameters<FastifyPluginAsyncZod>[0];

const eventId = z.string().max(200);

export function registerResumeRoute(
  app: RouteScope,
  sessionPath: string,
  family: SendFamily,
  { store, sessions, pingMs, turns }: SendOptions,
): void {
  app.get(
    `${sessionPath}/turns/:turn_id/events`,
    {
      config: { session: family.param },
      schema: {
        tags: family.tags,
        summary: "Resume a turn's stream after the last event received (Last-Event-ID), live or replayed",
        params: z.object({ [family.param]: z.string(), turn_id: z.string() }),
        headers: z.object({ 'last-event-id': eventId.optional() }),
        querystring: z.object({ after: eventId.optional() }),
        response: { 200: sseResponse, ...authErrors },
      },
    },
    async (request, reply) => {
      const target = family.target(request, request.params[family.param] ?? '');
      const session = await sessions.getSession(target.tenantId, target.sessionId, target.authorize);
      const turnId = request.params.turn_id ?? '';
      const header = request.headers['last-event-id'];
      const after =
        header !== undefined
          ? seqOf(header, turnId, ['header', 'last-event-id'])
          : request.query.after !== undefined
            ? seqOf(request.query.after, turnId, ['query', 'after'])
            : null;
      const log = await turnLogOf({ store, sessions, turns }, session, turnId);
      if (!log)
        throw new AppError('turn_not_found', undefined, {
          context: { [family.param]: target.sessionId, turn_id: turnId },
        });
      const view = family.view(request);
      return answerWithLog(reply, log, {
        sessionId: target.sessionId,
        view: view.message,
        showTools: view.tools,
        allApprovals: family.by === 'operator',
        after,
        pingMs,
      });
    },
  );
}

/** A turn's log: followed live while this process runs it, else rebuilt from the store; null if none. */
export async function turnLogOf(
  { store, sessions, turns }: Pick<SendOptions, 'store' | 'sessions' | 'turns'>,
  session: SessionRecord,
  turnId: string,
): Promise<TurnLog | null> {
  return (
    turns.get(session.id, turnId) ??
    storedTurn(store, {
      sessionId: session.id,
      turnId,
      sessionStatus: session.status,
      failure: turns.failure(session.id, turnId),
      paused: (await sessions.pausedTurnId(session.id)) === turnId,
    })
  );
}

/** The seq of a full event id of this turn; anything else is a 422 at `loc`. */
function seqOf(id: string, turnId: string, loc: string[]): number {
  const prefix = `${turnId}:`;
  const seq = id.startsWith(prefix) ? id.slice(prefix.length) : '';
  if (!/^\d{1,9}$/.test(seq)) {
    throw ValidationError.at(loc, `Expected an event id of this turn, "${turnId}:<seq>".`, 'value_error');
  }
  return Number(seq);
}
