// Server-Sent Events as a Readable that Fastify sends: events in text/event-stream framing, a `: ping`
// comment every 15 s so that idle proxies keep the connection, and a signal for when the reader is slow.
import { Readable } from 'node:stream';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // nginx and its kind buffer responses unless told not to.
  'x-accel-buffering': 'no',
} as const;

export class SseStream extends Readable {
  readonly #pingMs: number;
  #ping: NodeJS.Timeout | undefined;
  #backedUp = false;
  #closed = false;
  /** Events written in this turn of the event loop, sent together once it is over (one socket write). */
  #pending = '';
  /** Called when a slow reader has caught up (what was held back may be sent now). */
  onDemand: (() => void) | undefined;

  constructor(pingMs = 15_000) {
    // A small buffer: beyond it the writer holds back (and merges) instead of queueing.
    super({ highWaterMark: 16 * 1024 });
    this.#pingMs = pingMs;
  }

  /** True while the reader is behind: the writer should merge what it can rather than send it now. */
  get backedUp(): boolean {
    return this.#backedUp;
  }

  /** Sends one event; ignored once the stream is closed or the client has gone. */
  send(event: string, id: string, data: unknown): void {
    this.#startPings();
    this.#push(`event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Sends a comment line (clients ignore it): the answer's start, before any event is due. */
  comment(text: string): void {
    this.#startPings();
    this.#push(`: ${text}\n\n`);
  }

  // Pings start with the first event or comment: before it, nothing is sent (the answer may yet be a JSON error).
  #startPings(): void {
    if (this.#ping || this.#closed) return;
    this.#ping = setInterval(() => this.#push(': ping\n\n'), this.#pingMs);
    this.#ping.unref();
  }

  /** Ends the stream after what was sent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#ping);
    if (this.destroyed) return;
    this.#flush();
    this.push(null);
  }

  override _read(): void {
    if (!this.#backedUp) return;
    this.#backedUp = false;
    this.onDemand?.();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#closed = true;
    clearInterval(this.#ping);
    callback(error);
  }

  // A turn's events often come several in one turn of the event loop (a turn's start, its deltas, its end
  // after one commit): each pushed alone was a chunk and a socket write of its own.
  #push(chunk: string): void {
    if (this.#closed || this.destroyed) return;
    if (this.#pending === '') setImmediate(this.#flush);
    this.#pending += chunk;
    // A writer catching up on a long log writes many events without leaving the turn: they go now, so that
    // the buffer's bound (and `backedUp`) still hold.
    if (this.#pending.length >= this.readableHighWaterMark) this.#flush();
  }

  readonly #flush = (): void => {
    const chunk = this.#pending;
    this.#pending = '';
    if (chunk === '' || this.destroyed) return;
    if (!this.push(chunk)) this.#backedUp = true;
  };
}
