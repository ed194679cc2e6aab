// One call of an MCP server's tool (mcp-tools.ts holds the connection): its Idempotency-Key in `_meta`, its
// own timeout, sent again once on a connection found lost, and every failure an error outcome for the model
// (mcp-results.ts makes the result), never a throw unless the turn's signal aborted.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { outcomeOf } from './mcp-results.ts';
import {
  IDEMPOTENCY_META_KEY,
  isJsonObject,
  MAX_HTTP_RESPONSE_BYTES,
  ResponseTooLargeError,
} from './mcp-transport.ts';
import { idempotencyKeyOf, type ToolCallRequest, type ToolOutcome } from './tool.ts';

/** The connection as a call sees it. */
export interface McpLink {
  /** The server's name in the catalogue. */
  readonly name: string;
  /** The connected client; undefined while the connection is gone. */
  client(): Client | undefined;
  /** Connects again (one attempt at a time, shared). */
  connect(): Promise<Client>;
  /** Forgets `client`, found lost: the next call connects again. */
  lost(client: Client): void;
}

export const errorMessage = (err: unknown) =>
  (err instanceof Error ? err.message : String(err)).slice(0, 500);
const failed = (message: string): ToolOutcome => ({ status: 'error', output: { error: 'failed', message } });
const tooLarge: ToolOutcome = {
  status: 'error',
  output: { error: 'too_large', limit_bytes: MAX_HTTP_RESPONSE_BYTES },
};

/** The calls of one server's tools, with those waiting for an answer. */
export class McpCalls {
  readonly #link: McpLink;
  readonly #timeoutMs: number;
  /** The calls waiting for an answer, by idempotency key: over HTTP, ended when their response is too large. */
  readonly #waiting = new Map<string, AbortController>();

  constructor(link: McpLink, timeoutMs: number) {
    this.#link = link;
    this.#timeoutMs = timeoutMs;
  }

  /** Ends the call sent under `key`: its response over HTTP grew too large. */
  tooLarge(key: string): void {
    this.#waiting.get(key)?.abort(new ResponseTooLargeError());
  }

  /**
   * One call, connecting first if the connection is gone; a call that finds the connection lost (a restarted
   * server, a dead child) connects again once and is sent again, with the same idempotency key. `timeout_ms`
   * bounds each sending; connecting is bounded on its own (MIN_CONNECT_TIMEOUT_MS).
   */
  async call(tool: string, request: ToolCallRequest): Promise<ToolOutcome> {
    request.signal.throwIfAborted();
    const input = request.input;
    if (!isJsonObject(input)) return failed('the input must be a JSON object');
    const link = this.#link;
    let fresh = link.client() === undefined;
    for (;;) {
      let client: Client;
      try {
        const current = link.client();
        client = await unlessAborted(
          current === undefined ? link.connect() : Promise.resolve(current),
          request.signal,
        );
      } catch (err) {
        if (request.signal.aborted) throw request.signal.reason;
        return failed(`MCP server "${link.name}" cannot be reached: ${errorMessage(err)}`);
      }
      try {
        return await this.#send(client, tool, input, request);
      } catch (err) {
        if (request.signal.aborted) throw request.signal.reason;
        if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
          return { status: 'error', output: { error: 'timeout', message: errorMessage(err) } };
        }
        if (fresh || !isConnectionLost(err)) return failed(errorMessage(err));
        fresh = true;
        link.lost(client);
        void client.close().catch(() => {});
      }
    }
  }

  async #send(
    client: Client,
    tool: string,
    input: Record<string, unknown>,
    request: ToolCallRequest,
  ): Promise<ToolOutcome> {
    // A signal of the call's own: the SDK leaves its listener on the signal it is given, and a turn's is long-lived.
    // It also ends the call when its response over HTTP grows too large (mcp-transport.ts).
    const own = new AbortController();
    const onAbort = () => own.abort(request.signal.reason);
    request.signal.addEventListener('abort', onAbort, { once: true });
    const key = idempotencyKeyOf(request);
    this.#waiting.set(key, own);
    try {
      const result = await client.callTool(
        {
          name: tool,
          arguments: input,
          _meta: { [IDEMPOTENCY_META_KEY]: key },
        },
        undefined,
        { signal: own.signal, timeout: this.#timeoutMs },
      );
      return outcomeOf(result);
    } catch (err) {
      if (own.signal.reason instanceof ResponseTooLargeError) return tooLarge;
      throw err;
    } finally {
      request.signal.removeEventListener('abort', onAbort);
      if (this.#waiting.get(key) === own) this.#waiting.delete(key);
    }
  }
}

/** Whether `err` says the connection is gone (rather than the server answering with an error). */
function isConnectionLost(err: unknown): boolean {
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  if (err instanceof StreamableHTTPError || err instanceof TypeError) return true; // a status; fetch failed
  if (!(err instanceof Error)) return false;
  return err.message === 'Not connected' || ('code' in err && typeof err.code === 'string'); // EPIPE, ECONNRESET
}

/** Settles as `work` does, or rejects with `signal`'s reason once it aborts. */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
