// The listener's connections through a graceful stop (docs/internals/decisions.md#graceful-stop): nothing a
// client leaves open may hold the process up, and an answer in progress still gets its time. Node's
// server.close() closes only the connections idle at that instant and stops timing out the others, so it
// waits for whatever clients keep.
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
  /**
   * Every open connection, with its latest answer (HTTP/1.1 answers one request at a time on a connection).
   * Only a map entry per request: no listener, so that a request costs next to nothing until a stop.
   */
  readonly #connections = new Map<Socket, ServerResponse | null>();
  readonly #ended = new WeakSet<Socket>();
  #draining = false;
  #closed: Promise<void> | undefined;

  constructor(server: Server, options: ConnectionDrainOptions) {
    this.#server = server;
    this.#o = options;
    server.on('connection', (socket: Socket) => {
      this.#connections.set(socket, null);
      socket.once('close', () => this.#connections.delete(socket));
    });
    // First of the listeners, so that a header set here is there before any route answers.
    server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
      this.#connections.set(request.socket, response);
      if (this.#draining) response.setHeader('connection', 'close');
    });
  }

  /**
   * From now on every answer asks its client to close the connection afterwards, so that keep-alive
   * clients open their next connection elsewhere (the process is being drained; it still serves).
   */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    for (const response of this.#connections.values()) {
      if (response && !response.headersSent) response.setHeader('connection', 'close');
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

  async #close(deadline: number): Promise<void> {
    // Fastify closes the listener right after the preClose hooks that call this: start from there.
    while (this.#server.listening) await sleep(1);
    this.#endIdle();
    while (this.#connections.size > 0 && Date.now() < deadline && this.#producing()) {
      await sleep(POLL_MS);
      this.#endIdle();
    }
    const flushed = Date.now() + this.#o.flushMs;
    while (this.#connections.size > 0 && Date.now() < flushed) await sleep(POLL_MS);
    for (const socket of this.#connections.keys()) socket.destroy();
  }

  /** Ends each connection whose answer is done, or that never had one (idle, never used, half-sent headers). */
  #endIdle(): void {
    for (const [socket, response] of this.#connections) {
      if (this.#ended.has(socket) || (response && !response.writableEnded)) continue;
      this.#ended.add(socket);
      end(socket);
    }
  }

  /**
   * Whether some answer is still being produced: one already under way (a stream), or one to a request
   * received whole (a turn running). A request whose body is still arriving has not been acted on, so it
   * is not waited for: its client learns from the cut that it was not served.
   */
  #producing(): boolean {
    for (const response of this.#connections.values()) {
      if (!response || response.writableEnded) continue;
      if (response.headersSent || response.req.complete) return true;
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
