// A session's conversation event stream (GET …/events) as an async iterable that follows it for as long as the
// caller wants: every event once, in order, across dropped connections, a process that stopped and ownership
// moves, by reconnecting with the last id received as Last-Event-ID. It ends after session.closed or
// session.expired, when the caller stops iterating, or when its signal aborts.
import { ParleyError } from './errors.ts';
import { countOption, sleep, type Transport } from './transport.ts';
import { DEFAULT_MAX_RECONNECTS, readEvents, typedEvent } from './turn-stream.ts';
import type { ConversationEvent, SessionEvent } from './types.ts';

/** Either family's events; they differ only in how messages look. */
type AnyConversationEvent = ConversationEvent | SessionEvent;

/**
 * The events this client knows; it skips others (new ones may be added). A record of exactly the schema's
 * event names: one added there fails the typecheck here.
 */
const KNOWN_EVENTS: Record<AnyConversationEvent['event'], true> = {
  'message.created': true,
  'turn.started': true,
  'tool.started': true,
  'tool.completed': true,
  'tool.approval_requested': true,
  'turn.awaiting_approval': true,
  'message.completed': true,
  'turn.completed': true,
  'turn.cancelled': true,
  'turn.failed': true,
  'session.handoff_requested': true,
  'session.handed_back': true,
  'session.closed': true,
  'session.expired': true,
};
const known = new Set(Object.keys(KNOWN_EVENTS));

/** A connection open this long was working, even if nothing happened meanwhile (pings only). */
const WORKING_MS = 5_000;

export interface FollowOptions {
  /** The last event id already received: the stream starts after it. Default: the session's first event. */
  after?: string | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * `for await (const event of follower)`; iterate it once. A refusal (403, 404, 429 `event_stream_limit`, …) is
 * thrown from the loop as a ParleyError, as is `stream_interrupted` once the server could not be reached
 * `maxReconnects` times in a row (a connection that was answered starts the count again).
 */
export class ConversationEvents<E extends AnyConversationEvent = ConversationEvent>
  implements AsyncIterable<E>
{
  readonly #transport: Transport;
  readonly #path: string;
  readonly #signal: AbortSignal | undefined;
  readonly #maxReconnects: number;
  #lastEventId: string | undefined;
  #iterated = false;

  constructor(
    transport: Transport,
    path: string,
    options: FollowOptions & { maxReconnects?: number | undefined },
  ) {
    this.#transport = transport;
    this.#path = path;
    this.#signal = options.signal;
    this.#lastEventId = options.after;
    this.#maxReconnects = countOption(options.maxReconnects, DEFAULT_MAX_RECONNECTS);
  }

  /** The id of the last event received: where a new follower would start after. */
  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    if (this.#iterated) throw new Error('A ConversationEvents can be iterated once');
    this.#iterated = true;
    return this.#events();
  }

  async *#events(): AsyncGenerator<E, void, undefined> {
    const signal = this.#signal;
    let failures = 0;
    for (;;) {
      signal?.throwIfAborted();
      let response: Response | undefined;
      try {
        response = await this.#transport.request({
          method: 'GET',
          path: this.#path,
          headers: this.#lastEventId === undefined ? {} : { 'last-event-id': this.#lastEventId },
          accept: 'text/event-stream',
          idempotent: true,
          noNetworkRetry: true,
          signal,
        });
      } catch (err) {
        // A process stopping or busy, or no answer at all, is tried again below; any other refusal is final.
        if (!(err instanceof ParleyError && (err.status === 0 || err.status === 503))) throw err;
      }
      if (response) {
        // A connection counts as working once it told an event or stayed open a while: one the server answers
        // and ends at once, again and again, is a failure like no answer, so maxReconnects ends it.
        const opened = Date.now();
        try {
          for await (const message of readEvents(response, () => {})) {
            const event = typedEvent<E>(message, known);
            if (message.id) this.#lastEventId = message.id;
            if (!event) continue;
            failures = 0;
            yield event;
            if (event.event === 'session.closed' || event.event === 'session.expired') return;
          }
        } catch (err) {
          signal?.throwIfAborted();
          if (err instanceof ParleyError) throw err;
          // Otherwise the connection broke: follow again after the last id.
        }
        if (Date.now() - opened >= WORKING_MS) failures = 0;
      }
      // The stream ended or broke before the session did (its process stopped, or this reader fell behind).
      if (++failures > this.#maxReconnects) throw interrupted();
      await sleep(Math.min(250 * 2 ** (failures - 1), 4000), signal);
    }
  }
}

function interrupted(): ParleyError {
  return new ParleyError({
    status: 0,
    code: 'stream_interrupted',
    errorName: 'StreamInterruptedError',
    message: 'The conversation event stream broke and could not be followed again',
  });
}
