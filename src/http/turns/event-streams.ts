// This process's open conversation event streams (docs/internals/decisions.md#the-conversation-event-stream):
// each takes a place under two bounds, per conversation and in all, is woken when a commit of its session here
// appends events, and is closed when the process stops. What a stream sends it reads from the session's event
// log in the store (conversation-events.ts), so the registry holds no events, only who to wake.
import { AppError } from '../../errors.ts';

export interface EventStreamBounds {
  /** Streams open at once on one conversation. */
  perConversation: number;
  /** Streams open at once on this process. */
  max: number;
  /** How often a stream reads the log unwoken: commits made by another process (after an ownership move). */
  pollMs: number;
}

interface Subscriber {
  wake(): void;
  close(): void;
}

export class EventStreams {
  readonly bounds: EventStreamBounds;
  readonly #bySession = new Map<string, Set<Subscriber>>();
  #count = 0;

  constructor(bounds: EventStreamBounds) {
    this.bounds = bounds;
  }

  /** How many streams are open on this process. */
  get size(): number {
    return this.#count;
  }

  /**
   * Takes a place for a stream of `sessionId`, or refuses it (429 event_stream_limit for the conversation, 503
   * server_busy for the process) before anything is sent; returns what gives the place back.
   */
  open(sessionId: string, subscriber: Subscriber): () => void {
    const open = this.#bySession.get(sessionId) ?? new Set<Subscriber>();
    if (open.size >= this.bounds.perConversation) {
      throw new AppError('event_stream_limit', undefined, {
        context: { limit: this.bounds.perConversation },
        headers: { 'retry-after': '1' },
      });
    }
    if (this.#count >= this.bounds.max) {
      throw new AppError(
        'server_busy',
        'Too many event streams are open here; retry after the time in Retry-After.',
        {
          headers: { 'retry-after': '1' },
        },
      );
    }
    open.add(subscriber);
    this.#bySession.set(sessionId, open);
    this.#count++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#count--;
      open.delete(subscriber);
      if (open.size === 0 && this.#bySession.get(sessionId) === open) this.#bySession.delete(sessionId);
    };
  }

  /** A commit of `sessionId` appended events to its log: its streams read them now. */
  committed(sessionId: string): void {
    for (const subscriber of this.#bySession.get(sessionId) ?? []) subscriber.wake();
  }

  /** Ends every stream (the process stops): each client reconnects elsewhere with its Last-Event-ID. */
  closeAll(): void {
    for (const open of [...this.#bySession.values()]) for (const subscriber of [...open]) subscriber.close();
  }
}
