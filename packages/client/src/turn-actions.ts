// What both families do to a turn already sent, written once: decide the tool calls a paused turn waits for
// (the answer a send's, or the continuation streamed) and cancel a running or paused turn. A decision is bound
// to its call on the server and repeating the same one is idempotent, so these are safe to retry.
import type { SendRoute } from './send.ts';
import { turnResult } from './send.ts';
import { seg } from './transport.ts';
import { type AnyTurnEvent, TurnStream } from './turn-stream.ts';
import type { Decision, TurnResult } from './types.ts';

export interface DecideOptions {
  signal?: AbortSignal | undefined;
}

/** Which calls a decision names: one call id, several, or decisions already made. */
export type CallIds = string | readonly string[];

/** One decision per call: all approved, or all denied with the same reason. */
export function decisionsFor(callIds: CallIds, approved: boolean, reason?: string | null): Decision[] {
  const ids = typeof callIds === 'string' ? [callIds] : callIds;
  return ids.map((call_id) => ({ call_id, approved, ...(reason == null ? {} : { reason }) }));
}

const approvalsPath = (route: SendRoute, turnId: string) => `${route.session}/turns/${seg(turnId)}/approvals`;

/**
 * POST <session>/turns/{turn_id}/approvals: waits for the turn to go on, and answers like a send (the reply,
 * or the turn waiting again when a later step asks for more decisions).
 */
export async function decideForResult<Reply>(
  route: SendRoute,
  turnId: string,
  decisions: readonly Decision[],
  options: DecideOptions,
): Promise<TurnResult<Reply>> {
  const response = await route.transport.request({
    method: 'POST',
    path: approvalsPath(route, turnId),
    json: { decisions },
    idempotent: true,
    signal: options.signal,
  });
  return turnResult<Reply>(response);
}

/**
 * The same decision, answered as the turn's events after the pause it decided (no turn.started: the turn had
 * started). A connection that breaks is resumed after the last event, or, before any, the decision is sent again.
 */
export function decideStreamed<E extends AnyTurnEvent>(
  route: SendRoute,
  turnId: string,
  decisions: readonly Decision[],
  options: DecideOptions,
): TurnStream<E> {
  return new TurnStream<E>(
    {
      send: (signal) =>
        route.transport.request({
          method: 'POST',
          path: approvalsPath(route, turnId),
          json: { decisions },
          accept: 'text/event-stream',
          idempotent: true,
          noNetworkRetry: true,
          signal,
        }),
      resume: route.events,
    },
    { turnId, sendFirst: true, signal: options.signal, maxReconnects: route.maxReconnects },
  );
}

/** POST <session>/turns/{turn_id}/cancel: the turn once the cancel is committed (a finished one as it is). */
export function cancelTurn<Result>(
  route: SendRoute,
  turnId: string,
  options: DecideOptions,
): Promise<Result> {
  return route.transport.json({
    method: 'POST',
    path: `${route.session}/turns/${seg(turnId)}/cancel`,
    idempotent: true,
    signal: options.signal,
  });
}
