// A streamed turn as an async iterable of typed events that survives a dropped connection: the body is parsed
// with eventsource-parser; a stream that breaks after turn.started is resumed from the last event id
// (GET …/turns/{turn_id}/events after the last id), one that breaks before it is sent again with the same
// Idempotency-Key, and a turn the server reports interrupted is sent again, so the consumer reads one sequence.
// A decision's stream continues a turn already started: it is sent first, and resumed once an event arrived.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ParleyError } from './errors.ts';
import { countOption, sleep } from './transport.ts';
import type { SessionTurnEvent, TurnEvent } from './types.ts';

/** Either family's events; they differ only in how messages look. */
export type AnyTurnEvent = TurnEvent | SessionTurnEvent;

/**
 * The events this client knows; it skips others, as the server's contract asks (new ones may be added). A
 * record of exactly the server schema's event names: one added there fails the typecheck here.
 */
const KNOWN_EVENTS: Record<AnyTurnEvent['event'], true> = {
  'turn.started': true,
  'message.delta': true,
  'tool.started': true,
  'tool.completed': true,
  'tool.approval_requested': true,
  'message.completed': true,
  'turn.completed': true,
  'turn.awaiting_approval': true,
  'turn.cancelled': true,
  'turn.failed': true,
  'message.created': true,
};
const known = new Set(Object.keys(KNOWN_EVENTS));

/**
 * The events after which the server ends the stream: the turn ended, or waits for decisions, or people handle
 * the session (the user's message is stored, no model answers).
 */
const LAST_EVENTS = new Set<AnyTurnEvent['event']>([
  'message.created',
  'turn.completed',
  'turn.failed',
  'turn.cancelled',
  'turn.awaiting_approval',
]);

export const DEFAULT_MAX_RECONNECTS = 5;

/** How a TurnStream reaches the server; each call answers 200 with an event stream, or throws a ParleyError. */
export interface TurnSource {
  /** The streamed send, with the same Idempotency-Key every time; absent for a stream that only resumes. */
  send?: ((signal: AbortSignal | undefined) => Promise<Response>) | undefined;
  /** The turn's events after the full event id `after`, or from turn.started without one. */
  resume(turnId: string, after: string | undefined, signal: AbortSignal | undefined): Promise<Response>;
}

export interface TurnStreamOptions {
  signal?: AbortSignal | undefined;
  /** A stream that resumes a known turn: its id, and the last event id already received (if any). */
  turnId?: string | undefined;
  after?: string | undefined;
  /**
   * The send continues the known turn (a decision): made first although `turnId` is given, and made again
   * after a break that came before any event.
   */
  sendFirst?: boolean | undefined;
  /** Consecutive failed connections tolerated before giving up with `stream_interrupted`. Default 5. */
  maxReconnects?: number | undefined;
}

/**
 * One streamed turn: `for await (const event of stream)`. Iterate it once. The request is made when the
 * iteration starts; a refusal before the stream (422, 409 session_closed, …) is thrown from the loop as a
 * ParleyError, as is a connection that could not be resumed (`stream_interrupted`, status 0).
 *
 * The sequence ends with `turn.completed`, `turn.failed`, `turn.cancelled` (after the message.completed of
 * the text written until the cancel) or `turn.awaiting_approval` (the turn waits for decisions; the
 * decision's own stream goes on with it). A break in the connection is invisible: the
 * events continue where they stopped. One exception: when the server reports the turn interrupted (its
 * process stopped mid-turn), the send is repeated and the turn starts again with a second `turn.started`
 * of the same `turn_id`; drop the reply text held so far when it arrives.
 */
export class TurnStream<E extends AnyTurnEvent = TurnEvent> implements AsyncIterable<E> {
  readonly #source: TurnSource;
  readonly #signal: AbortSignal | undefined;
  readonly #maxReconnects: number;
  #turnId: string | undefined;
  #lastEventId: string | undefined;
  readonly #sendFirst: boolean;
  #iterated = false;

  constructor(source: TurnSource, options: TurnStreamOptions = {}) {
    this.#source = source;
    this.#signal = options.signal;
    this.#maxReconnects = countOption(options.maxReconnects, DEFAULT_MAX_RECONNECTS);
    this.#turnId = options.turnId;
    this.#lastEventId = options.after;
    this.#sendFirst = options.sendFirst === true;
  }

  /** The turn's id, once turn.started arrived (or given, for a resumed turn). */
  get turnId(): string | undefined {
    return this.#turnId;
  }

  /** The id of the last event received, `<turn_id>:<seq>`: where a resume starts from. */
  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    if (this.#iterated) throw new Error('A TurnStream can be iterated once');
    this.#iterated = true;
    return this.#events();
  }

  async *#events(): AsyncGenerator<E, void, undefined> {
    const signal = this.#signal;
    const send = this.#source.send;
    /** Whether the next connection sends the request (again) rather than resuming the turn. */
    let fromStart = send !== undefined && (this.#turnId === undefined || this.#sendFirst);
    let failures = 0;
    let restarts = 0;
    for (;;) {
      signal?.throwIfAborted();
      let response: Response | undefined;
      const resuming = !(fromStart && send);
      try {
        response = resuming ? await this.#resume(signal) : await send(signal);
      } catch (err) {
        // Refusals are final; a connection that failed is one more failure, retried below.
        if (!(err instanceof ParleyError && err.code === 'network_error')) throw err;
      }
      let progressed = false;
      let interrupted = false;
      let ended = false;
      if (response) {
        try {
          for await (const message of readEvents(response, () => {
            ended = true;
          })) {
            if (message.id !== undefined) this.#lastEventId = message.id;
            const event = parseEvent<E>(message);
            if (!event) continue;
            progressed = true;
            if (event.event === 'turn.started') this.#turnId = event.data.turn_id;
            // From the first event on (turn.started, or a decision's first), a break resumes after the last.
            if (this.#turnId !== undefined) fromStart = false;
            if (event.event === 'turn.failed' && event.data.error.code === 'turn_interrupted' && send) {
              // The server keeps the turn: the same request with the same key runs it again from its start.
              interrupted = true;
              break;
            }
            yield event;
            if (LAST_EVENTS.has(event.event)) return;
          }
        } catch (err) {
          signal?.throwIfAborted();
          if (err instanceof ParleyError) throw err;
          // Otherwise the connection broke: resume below.
        }
      }
      // A resume answered with nothing at all, complete: nothing follows the event it started after.
      if (resuming && ended && !progressed) return;
      if (interrupted) {
        if (++restarts > this.#maxReconnects) throw interruptedError(this.#turnId, 'interrupted');
        fromStart = true;
        this.#lastEventId = undefined;
        continue;
      }
      failures = progressed ? 1 : failures + 1;
      if (failures > this.#maxReconnects) throw interruptedError(this.#turnId, 'dropped');
      await sleep(reconnectDelayMs(failures), signal);
    }
  }

  #resume(signal: AbortSignal | undefined): Promise<Response> {
    const turnId = this.#turnId;
    if (turnId === undefined) throw new Error('No turn to resume');
    return this.#source.resume(turnId, this.#lastEventId, signal);
  }
}

/** 0.25 s, 0.5 s, 1 s, 2 s, then 4 s between connections that failed in a row. */
const reconnectDelayMs = (failures: number) => Math.min(250 * 2 ** (failures - 1), 4000);

function interruptedError(turnId: string | undefined, how: 'dropped' | 'interrupted'): ParleyError {
  return new ParleyError({
    status: 0,
    code: 'stream_interrupted',
    errorName: 'StreamInterruptedError',
    message:
      how === 'dropped'
        ? 'The event stream broke and could not be resumed'
        : 'The turn was interrupted on the server too many times',
    ...(turnId ? { context: { turn_id: turnId } } : {}),
  });
}

/** The events of an SSE body as they arrive, `onEnd` once it ended whole; cancels it when the consumer stops early. */
export async function* readEvents(
  response: Response,
  onEnd: () => void,
): AsyncGenerator<EventSourceMessage, void, undefined> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream') || !response.body) {
    await response.body?.cancel();
    throw new ParleyError({
      status: response.status,
      code: 'invalid_response',
      errorName: 'InvalidResponseError',
      message: `Expected an event stream, got ${type || 'no body'}`,
    });
  }
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return onEnd();
      parser.feed(decoder.decode(value, { stream: true }));
      for (const message of queue.splice(0)) yield message;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function parseEvent<E extends AnyTurnEvent>(message: EventSourceMessage): E | null {
  return typedEvent<E>(message, known);
}

/**
 * `{ event, id, data }` of an SSE message whose name is in `known` (null for any other: new events may be
 * added); the wire schema (@parley/schemas) types the data of each event name.
 */
export function typedEvent<E>(message: EventSourceMessage, known: ReadonlySet<string>): E | null {
  if (message.event === undefined || !known.has(message.event)) return null;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch (cause) {
    throw new ParleyError({
      status: 200,
      code: 'invalid_response',
      errorName: 'InvalidResponseError',
      message: `The data of a ${message.event} event is not JSON`,
      cause,
    });
  }
  return { event: message.event, id: message.id ?? '', data } as E;
}
