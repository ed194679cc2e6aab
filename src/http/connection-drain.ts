// The listener's connections through a graceful stop (DESIGN.md §16): nothing a client leaves open may hold
// the process up, and an answer in progress still gets its time. Node's server.close() closes only the
// connections idle at that instant and stops timing out the others, so it waits for whatever clients keep.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ConnectionDrainOptions {
  /** Once answers are done or out of time, how long their last bytes may take to reach a slow reader. */
  flushMs: number;
}

/** How often the closing waits look again: connections are few by then, and the checks are cheap. */
const POLL_MS = 50;

export class ConnectionDrain {
  readonly #server: Server;
  readonly #o: ConnectionDrainOptions;
  /** Every open connection, with the answers in progress on it. */
  readonly #connections = new Map<Socket, Set<ServerResponse>>();
  #draining = false;
  #closing = false;
  #closed: Promise<void> | undefined;

  constructor(server: Server, options: ConnectionDrainOptions) {
    this.#server = server;
    this.#o = options;
    server.on('connection', (socket: Socket) => {
      this.#connections.set(socket, new Set());
      socket.once('close', () => this.#connections.delete(socket));
    });
    // First of the listeners, so that a header set here is there before any route answers.
    server.prependListener('request', (request: IncomingMessage, response: ServerResponse) =>
      this.#track(request, response),
    );
  }

  /**
   * From now on every answer asks its client to close the connection afterwards, so that keep-alive
   * clients open their next connection elsewhere (the process is being drained; it still serves).
   */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    for (const answers of this.#connections.values()) {
      for (const response of answers) if (!response.headersSent) response.setHeader('connection', 'close');
    }
  }

  /**
   * Once the listener has closed: closes every connection without an answer in progress (idle, never used,
   * or still sending its request's headers), and each other one as soon as its answers are done; at
   * `deadline` (epoch ms), or once no answer is being produced any more, allows `flushMs` for the last
   * bytes, then cuts whatever is still open. Resolves once every connection is closed or cut.
   */
  close(deadline: number): Promise<void> {
    this.drain();
    this.#closed ??= this.#close(deadline);
    return this.#closed;
  }

  #track(request: IncomingMessage, response: ServerResponse): void {
    const answers = this.#connections.get(request.socket);
    if (!answers) return;
    if (this.#draining) response.setHeader('connection', 'close');
    answers.add(response);
    response.once('close', () => {
      answers.delete(response);
      if (this.#closing && answers.size === 0) end(request.socket);
    });
  }

  async #close(deadline: number): Promise<void> {
    // Fastify closes the listener right after the preClose hooks that call this: start from there.
    while (this.#server.listening) await sleep(1);
    this.#closing = true;
    for (const [socket, answers] of this.#connections) if (answers.size === 0) end(socket);
    while (this.#connections.size > 0 && Date.now() < deadline && this.#producing()) await sleep(POLL_MS);
    const flushed = Date.now() + this.#o.flushMs;
    while (this.#connections.size > 0 && Date.now() < flushed) await sleep(POLL_MS);
    for (const socket of this.#connections.keys()) socket.destroy();
  }

  /**
   * Whether some answer is still being produced: one already under way (a stream), or one to a request
   * received whole (a turn running). A request whose body is still arriving has not been acted on, so it
   * is not waited for: its client learns from the cut that it was not served.
   */
  #producing(): boolean {
    for (const answers of this.#connections.values()) {
      for (const response of answers) {
        if (response.writableEnded) continue;
        if (response.headersSent || response.req.complete) return true;
      }
    }
    return false;
  }
}

/**
 * Ends a connection with no answer in progress. It reads nothing more, so a request arriving meanwhile is never
 * acted on unanswered; what it still has to write is flushed first.
 */
function end(socket: Socket): void {
  socket.pause();
  if (socket.writableLength === 0) socket.destroy();
  else socket.destroySoon();
}
