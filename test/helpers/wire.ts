// Raw HTTP/1.1 clients for the slow-client and shutdown tests: a socket that writes exactly what the test says, keeps what
// it receives and tells when the server lets go of it, so that each client leaves its connection in the
// state the test means (idle, never used, a stream no longer read).
import { type IncomingHttpHeaders, request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface Wire {
  socket: Socket;
  received(): string;
  /** Settles when the connection has closed; a paused socket must be resumed to see the server's end. */
  closed: Promise<void>;
  /** Resolves once what has arrived contains `text` (or satisfies it); rejects if the connection closes first. */
  until(text: string | ((received: string) => boolean)): Promise<void>;
}

/** A connection to 127.0.0.1:`port`, resolved once the kernel has established it. */
export async function openWire(port: number): Promise<Wire> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  const waiting = new Set<() => void>();
  socket.setEncoding('utf8');
  socket.on('data', (piece: string) => {
    received += piece;
    for (const check of waiting) check();
  });
  // A connection the server cuts may be reset rather than closed; either way it is gone.
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    received: () => received,
    closed,
    until: (text) =>
      new Promise<void>((resolve, reject) => {
        const done = typeof text === 'string' ? (r: string) => r.includes(text) : text;
        const check = () => {
          if (!done(received)) return;
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
        closed.then(() => !done(received) && reject(new Error(`closed before ${String(text)}: ${received}`)));
      }),
  };
}

/** A kept-alive HTTP/1.1 request as a client writes it, with a JSON body when `body` is given. */
export function httpRequest(
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive'];
  for (const [name, value] of Object.entries(options.headers ?? {})) lines.push(`${name}: ${value}`);
  const text = options.body === undefined ? '' : JSON.stringify(options.body);
  if (options.body !== undefined) {
    lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(text)}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n${text}`;
}

/** A streamed send (POST …/messages/stream, Accept: text/event-stream) of `content` with an API key. */
export function streamRequest(sessionId: string, content: string, apiKey: string): string {
  return httpRequest('POST', `/v1/agents/sessions/${sessionId}/messages/stream`, {
    body: { content },
    headers: { 'x-api-key': apiKey, accept: 'text/event-stream' },
  });
}

export interface HostAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A request to `url` that names `host` in its Host header, as a page from another site does once its DNS name
 * points at this machine (fetch sets Host from the URL, and may not be told otherwise).
 */
export function requestAs(
  url: string,
  host: string,
  options: { method?: string; path?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<HostAnswer> {
  const text = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(options.path ?? '/', url),
      {
        method: options.method ?? 'GET',
        headers: {
          host,
          ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (piece: string) => {
          body += piece;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}
