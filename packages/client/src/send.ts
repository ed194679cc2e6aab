// A send as both families make it, written once: the plain send (the committed reply), the streamed send (a
// TurnStream that resumes a dropped connection and repeats the send with the same Idempotency-Key) and the
// resume of a known turn. Each family gives only its paths and how it asks for a turn's events again.
import { newIdempotencyKey } from './idempotency.ts';
import type { Transport } from './transport.ts';
import { type AnyTurnEvent, type TurnSource, TurnStream } from './turn-stream.ts';
import type { HandledByHumans, MessageCreate, PausedTurn, SendInput, TurnResult } from './types.ts';

export interface SendOptions {
  /** Default: a new random key; every retry of this send (and every resume of its stream) reuses it. */
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface ResumeOptions {
  /** The last event id received (`<turn_id>:<seq>`); without it, the whole turn from turn.started. */
  after?: string | undefined;
  signal?: AbortSignal | undefined;
}

/** Where one session's (or conversation's) messages are sent, and how its turns' events are read again. */
export interface SendRoute {
  transport: Transport;
  /** The path of the session (or conversation): its turns are under `<session>/turns/{turn_id}`. */
  session: string;
  /** The path of the messages: a send posts to it, a streamed send to `<messages>/stream`. */
  messages: string;
  /** The events of a turn after a full event id (the families ask for them differently). */
  events: TurnSource['resume'];
  /** Consecutive failed connections a stream tolerates (the client's option). */
  maxReconnects: number | undefined;
}

export const messageBody = (input: SendInput): MessageCreate =>
  typeof input === 'string' ? { content: input } : input;

/**
 * POST <messages> with an Idempotency-Key (given or new): the agent's reply once it is committed, or the turn
 * waiting for decisions (202).
 */
export async function sendForReply<Reply>(
  route: SendRoute,
  input: SendInput,
  options: SendOptions,
): Promise<TurnResult<Reply>> {
  const response = await route.transport.request({
    method: 'POST',
    path: route.messages,
    json: messageBody(input),
    headers: { 'idempotency-key': options.idempotencyKey ?? newIdempotencyKey() },
    idempotent: true,
    signal: options.signal,
  });
  return turnResult<Reply>(response);
}

/**
 * A send's (or a decision's) answer marked by its status: 202 is a turn waiting for decisions, a 201 naming
 * `handled_by: "humans"` a message stored for people to answer, else a reply.
 */
export async function turnResult<Reply>(response: Response): Promise<TurnResult<Reply>> {
  const body = (await response.json()) as object;
  if (response.status === 202)
    return { ...(body as Omit<PausedTurn, 'status'>), status: 'awaiting_approval' };
  if ('handled_by' in body && body.handled_by === 'humans')
    return { ...(body as Omit<HandledByHumans, 'status'>), status: 'handled_by_humans' };
  return { ...(body as Reply), status: 'replied' };
}

/** POST <messages>/stream: the turn's events; every connection of the stream sends the same key and body. */
export function sendStreamed<E extends AnyTurnEvent>(
  route: SendRoute,
  input: SendInput,
  options: SendOptions,
): TurnStream<E> {
  const key = options.idempotencyKey ?? newIdempotencyKey();
  const body = messageBody(input);
  return new TurnStream<E>(
    {
      send: (signal) =>
        route.transport.request({
          method: 'POST',
          path: `${route.messages}/stream`,
          json: body,
          headers: { 'idempotency-key': key },
          accept: 'text/event-stream',
          idempotent: true,
          noNetworkRetry: true,
          signal,
        }),
      resume: route.events,
    },
    { signal: options.signal, maxReconnects: route.maxReconnects },
  );
}

/** The events of the turn `turnId` after `options.after`, resumed across breaks like a streamed send. */
export function resumeEvents<E extends AnyTurnEvent>(
  route: SendRoute,
  turnId: string,
  options: ResumeOptions,
): TurnStream<E> {
  return new TurnStream<E>(
    { resume: route.events },
    { turnId, after: options.after, signal: options.signal, maxReconnects: route.maxReconnects },
  );
}
