// How Parley reaches an MCP server (mcp-tools.ts holds the connection): over streamable HTTP with the catalogue's
// headers and its response bodies bounded, a JSON body whole and an SSE stream per event; or as a stdio
// child whose stderr's tail is kept for the warning when it dies.
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isStdioServer, type McpServerConfig } from '../agents/catalogue-tools.ts';

/** The `_meta` key carrying a call's Idempotency-Key: MCP has no headers, so the key travels in the request. */
export const IDEMPOTENCY_META_KEY = 'parley/idempotency_key';
/**
 * The most of an HTTP response body (a JSON one), or of one event of an SSE stream, that is read: a larger
 * one is cut off rather than buffered. (Over stdio, the SDK bounds a message to 10 MiB.)
 */
export const MAX_HTTP_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Kept of a stdio child's stderr, for the warning when it dies; the rest is dropped, so it cannot flood logs. */
const STDERR_TAIL_CHARS = 2_000;

/** What a call's signal is aborted with when its response over HTTP grew past MAX_HTTP_RESPONSE_BYTES. */
export class ResponseTooLargeError extends Error {}

export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What the connection hears from its transport. */
export interface TransportHooks {
  /** A response over HTTP was cut: the call sent under `key` (an idempotency key) gets no answer. */
  tooLarge(key: string): void;
  /** A stdio child's stderr, its last STDERR_TAIL_CHARS so far. */
  stderr(tail: string): void;
}

/**
 * The headers an HTTP server is sent, their values read from `env` (`headers_env`). Throws on a variable that is
 * not set: checked before any connection, as it will not appear by retrying.
 */
export function headersOf(
  config: McpServerConfig,
  env: Readonly<Record<string, string>>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (isStdioServer(config)) return headers;
  for (const [header, variable] of Object.entries(config.headers_env ?? {})) {
    const value = env[variable];
    if (value === undefined) {
      throw new Error(`MCP server "${config.name}": ${variable} (for header ${header}) is not set`);
    }
    headers[header] = value;
  }
  return headers;
}

/** A new transport to the server: each connection has its own (a stdio child is started again). */
export function makeTransport(
  config: McpServerConfig,
  headers: Record<string, string>,
  hooks: TransportHooks,
): Transport {
  if (!isStdioServer(config)) {
    const fetchBounded = boundedFetch(MAX_HTTP_RESPONSE_BYTES, (requestBody) => {
      const key = idempotencyKeyIn(requestBody);
      if (key !== undefined) hooks.tooLarge(key);
    });
    return new StreamableHTTPClientTransport(new URL(config.url), {
      requestInit: { headers },
      fetch: fetchBounded,
    });
  }
  const transport = new StdioClientTransport({
    command: config.command,
    args: config.args,
    env: { ...getDefaultEnvironment(), ...config.env },
    stderr: 'pipe',
  });
  let tail = '';
  hooks.stderr(tail);
  transport.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    hooks.stderr(tail);
  });
  return transport;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Passes a body on while it is within `limit` bytes, and errors past it (which cancels the response, so no
 * more than that is held). An SSE stream is counted per event (a blank line ends one): one that stays open
 * may carry any number of events.
 */
function boundedBody(
  sse: boolean,
  limit: number,
  onTooLarge: () => void,
): TransformStream<Uint8Array, Uint8Array> {
  let count = 0;
  let lineBytes = 0;
  let afterCr = false;
  return new TransformStream({
    transform(chunk, controller) {
      if (!sse) {
        count += chunk.byteLength;
      } else {
        for (let i = 0; i < chunk.length && count <= limit; i++) {
          const byte = chunk[i];
          if (byte === LF && afterCr) {
            afterCr = false; // the second half of a CRLF
            continue;
          }
          afterCr = byte === CR;
          if (byte !== LF && byte !== CR) {
            lineBytes += 1;
            count += 1;
          } else {
            if (lineBytes === 0) count = 0;
            lineBytes = 0;
          }
        }
      }
      if (count > limit) {
        onTooLarge();
        controller.error(new ResponseTooLargeError(`the response is larger than ${limit} bytes`));
        return;
      }
      controller.enqueue(chunk);
    },
  });
}

/**
 * A fetch whose response bodies are bounded (boundedBody). `onTooLarge` is given the body of the request
 * whose response was cut: an SSE stream's error reaches only the transport's `onerror`, never the request.
 */
function boundedFetch(limit: number, onTooLarge: (requestBody: unknown) => void): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (response.body === null || [101, 103, 204, 205, 304].includes(response.status)) return response;
    const type = response.headers.get('content-type')?.split(';')[0].trim().toLowerCase();
    const body = response.body.pipeThrough(
      boundedBody(type === 'text/event-stream', limit, () => onTooLarge(init?.body)),
    );
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** The idempotency key in a `tools/call` request's JSON, if it is one. */
function idempotencyKeyIn(requestBody: unknown): string | undefined {
  if (typeof requestBody !== 'string' || !requestBody.includes(IDEMPOTENCY_META_KEY)) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(requestBody);
  } catch {
    return undefined;
  }
  const params = isJsonObject(message) ? message.params : undefined;
  const meta = isJsonObject(params) ? params._meta : undefined;
  const key = isJsonObject(meta) ? meta[IDEMPOTENCY_META_KEY] : undefined;
  return typeof key === 'string' ? key : undefined;
}
