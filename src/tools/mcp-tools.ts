// The tools of an agent's MCP servers (DESIGN §13), through the official SDK's client: streamable HTTP or a
// stdio child, the server's tools offered as `<server>__<tool>`, the list kept current on list_changed, and a
// connection that drops made again on the next call. A failing server gives error outcomes, never a throw.
// What a server sends is bounded (DESIGN §16): the tools offered and their size, listings, response bodies.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  McpError,
  type Tool as McpTool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { isStdioServer, type McpServerConfig, mcpToolName } from '../agents/catalogue-tools.ts';
import { outcomeOf } from './mcp-results.ts';
import { idempotencyKeyOf, type Tool, type ToolCallRequest, type ToolOutcome } from './tool.ts';

export interface McpToolSource {
  /** The server's name in the catalogue. */
  readonly name: string;
  /** The server's tools as last listed (none while it has never been reached). */
  tools(): readonly Tool[];
  /** Ends the connection (a stdio child exits) and stops retrying. */
  close(): Promise<void>;
}

export interface McpOptions {
  /** Where `headers_env` values are read (config.ts's environment). */
  env: Readonly<Record<string, string>>;
  log: { info(obj: unknown, msg?: string): void; warn(obj: unknown, msg?: string): void };
  /** connectMcpServers: the wait between attempts to reach a server that was down at start (5 s). */
  retryMs?: number;
}

/** The `_meta` key carrying a call's Idempotency-Key: MCP has no headers, so the key travels in the request. */
export const IDEMPOTENCY_META_KEY = 'parley/idempotency_key';
const CLIENT_INFO = { name: 'parley', version: '0.1.0' };
/** Providers' rule for a function name (catalogue-tools.ts); a server's tool that breaks it is not offered. */
const offerableName = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * The least time a connection (start, initialize, listing) may take: a stdio child needs its runtime started,
 * which a tool's short `timeout_ms` is not meant for.
 */
const MIN_CONNECT_TIMEOUT_MS = 10_000;
/** A server that pages forever must not hold the listing forever. */
const MAX_LIST_PAGES = 64;
/** Providers refuse more tools in a request (OpenAI: 128, a 400 on every turn); a server's beyond are skipped. */
export const MAX_TOOLS_PER_SERVER = 128;
/** Where a tool's description is cut: it is sent to the model on every step. */
export const MAX_DESCRIPTION_CHARS = 4_000;
/** A tool whose input schema's JSON is larger is not offered: it too is sent on every step. */
export const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;
/** How many skipped tools a warning names, of each kind; its counts tell the rest. */
const WARNED_NAMES = 10;
const SKIPPED_MESSAGE =
  `MCP tools not offered: beyond ${MAX_TOOLS_PER_SERVER} per server, an invalid name, ` +
  `or an input schema over ${MAX_INPUT_SCHEMA_BYTES} bytes`;
/**
 * The most of an HTTP response body (a JSON one), or of one event of an SSE stream, that is read: a larger
 * one is cut off rather than buffered. (Over stdio, the SDK bounds a message to 10 MiB.)
 */
export const MAX_HTTP_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Kept of a stdio child's stderr, for the warning when it dies; the rest is dropped, so it cannot flood logs. */
const STDERR_TAIL_CHARS = 2_000;

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 500);
const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const failed = (message: string): ToolOutcome => ({ status: 'error', output: { error: 'failed', message } });
const tooLarge: ToolOutcome = {
  status: 'error',
  output: { error: 'too_large', limit_bytes: MAX_HTTP_RESPONSE_BYTES },
};

/** Cuts `text` to `max` characters, never between the halves of a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]) ? max - 1 : max;
  return text.slice(0, end);
}

/** Runs `work` one at a time: asked while it runs, it runs once more afterwards, however often asked. */
function coalesced(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const run = (): Promise<void> => {
    if (running === undefined) {
      running = work().finally(() => {
        running = undefined;
      });
      return running;
    }
    queued ??= running
      .catch(() => {})
      .then(() => {
        queued = undefined;
        return run();
      });
    return queued;
  };
  return run;
}

class ResponseTooLargeError extends Error {}

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

/** Why a listing's tools were not offered; told in one warning per listing, and not again while the same. */
interface Skipped {
  beyondLimit: number;
  invalidNames: string[];
  invalidNameCount: number;
  largeSchemas: string[];
  largeSchemaCount: number;
}

/** The warning for what a listing skipped; undefined when it skipped nothing. */
function skipWarning(server: string, skipped: Skipped): Record<string, unknown> | undefined {
  const total = skipped.beyondLimit + skipped.invalidNameCount + skipped.largeSchemaCount;
  if (total === 0) return undefined;
  return {
    server,
    skipped: total,
    ...(skipped.beyondLimit > 0 && { beyond_limit: skipped.beyondLimit }),
    ...(skipped.invalidNameCount > 0 && { invalid_names: skipped.invalidNames }),
    ...(skipped.largeSchemaCount > 0 && { large_schemas: skipped.largeSchemas }),
  };
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

class McpServerConnection implements McpToolSource {
  readonly name: string;
  readonly #config: McpServerConfig;
  readonly #options: McpOptions;
  readonly #headers: Record<string, string>;
  #client: Client | undefined;
  #transport: Transport | undefined;
  #connecting: Promise<Client> | undefined;
  #tools: readonly Tool[] = [];
  /** Bumped at each listing, so that an older listing finishing late does not replace a newer one. */
  #listings = 0;
  #warnedMissing = '';
  #warnedSkipped = '';
  /** The calls waiting for an answer, by idempotency key: over HTTP, ended when their response is too large. */
  readonly #calls = new Map<string, AbortController>();
  #stderrTail = '';
  #retryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(config: McpServerConfig, options: McpOptions) {
    this.name = config.name;
    this.#config = config;
    this.#options = options;
    // Checked before any connection: a variable that is not set will not appear by retrying.
    this.#headers = {};
    if (!isStdioServer(config)) {
      for (const [header, variable] of Object.entries(config.headers_env ?? {})) {
        const value = options.env[variable];
        if (value === undefined) {
          throw new Error(`MCP server "${config.name}": ${variable} (for header ${header}) is not set`);
        }
        this.#headers[header] = value;
      }
    }
  }

  tools(): readonly Tool[] {
    return this.#tools;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    await this.#connecting?.catch(() => {});
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    if (client === undefined) return;
    if (transport instanceof StreamableHTTPClientTransport) {
      // The spec asks a client that is done to end its session; a server that does not answer is not waited for.
      const timer = new Promise((resolve) => setTimeout(resolve, 1_000).unref());
      await Promise.race([transport.terminateSession().catch(() => {}), timer]);
    }
    await client.close().catch(() => {});
  }

  /** Connects now; on failure warns and tries again every `retryMs` in the background until it succeeds. */
  async start(retryMs: number): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      this.#options.log.warn(
        {
          server: this.name,
          err: errorMessage(err),
          stderr: this.#stderrTail || undefined,
          retry_ms: retryMs,
        },
        'MCP server unreachable; its tools are offered once it is reached',
      );
      this.#retry(retryMs);
    }
  }

  #retry(retryMs: number): void {
    if (this.#closed) return;
    this.#retryTimer = setTimeout(() => {
      this.connect().then(
        () => this.#options.log.info({ server: this.name, tools: this.#tools.length }, 'MCP server reached'),
        () => this.#retry(retryMs),
      );
    }, retryMs);
    this.#retryTimer.unref();
  }

  /** A connected client with the tools listed; one attempt at a time, shared by whoever asks meanwhile. */
  connect(): Promise<Client> {
    if (this.#closed) return Promise.reject(new Error(`MCP server "${this.name}" is closed`));
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #open(): Promise<Client> {
    const timeout = Math.max(this.#config.timeout_ms, MIN_CONNECT_TIMEOUT_MS);
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const transport = this.#makeTransport();
    // A chatty server's notifications start one listing at a time, and at most one more after it.
    const list = coalesced(() => this.#list(client));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      list().catch((err: unknown) =>
        this.#options.log.warn(
          { server: this.name, err: errorMessage(err) },
          'MCP tools could not be listed again',
        ),
      );
    });
    client.onclose = () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      // The tools stay offered: the next call connects again (a restarted child, a server back).
      if (!this.#closed) {
        this.#options.log.warn(
          { server: this.name, stderr: this.#stderrTail || undefined },
          'MCP connection closed',
        );
      }
    };
    await client.connect(transport, { timeout });
    this.#client = client;
    this.#transport = transport;
    try {
      await list();
    } catch (err) {
      this.#client = undefined;
      await client.close().catch(() => {});
      throw err;
    }
    if (this.#closed) {
      await client.close().catch(() => {});
      throw new Error(`MCP server "${this.name}" is closed`);
    }
    return client;
  }

  #makeTransport(): Transport {
    const config = this.#config;
    if (!isStdioServer(config)) {
      const fetchBounded = boundedFetch(MAX_HTTP_RESPONSE_BYTES, (requestBody) => {
        const key = idempotencyKeyIn(requestBody);
        if (key !== undefined) this.#calls.get(key)?.abort(new ResponseTooLargeError());
      });
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: this.#headers },
        fetch: fetchBounded,
      });
    }
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: { ...getDefaultEnvironment(), ...config.env },
      stderr: 'pipe',
    });
    this.#stderrTail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    return transport;
  }

  /**
   * Lists every page of the server's tools and offers those allowed, within the bounds: what is held is the
   * tools offered and one page, however many the server has.
   */
  async #list(client: Client): Promise<void> {
    const listing = ++this.#listings;
    const allowed = this.#config.tools;
    const found = new Set<string>(); // of the allow-listed names
    const tools: Tool[] = [];
    const skipped: Skipped = {
      beyondLimit: 0,
      invalidNames: [],
      invalidNameCount: 0,
      largeSchemas: [],
      largeSchemaCount: 0,
    };
    if (client.getServerCapabilities()?.tools !== undefined) {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: Math.max(this.#config.timeout_ms, MIN_CONNECT_TIMEOUT_MS),
        });
        for (const tool of result.tools) {
          if (allowed !== undefined) {
            if (!allowed.includes(tool.name)) continue;
            found.add(tool.name);
          }
          this.#offer(tool, tools, skipped);
        }
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
    }
    if (listing !== this.#listings || this.#client !== client) return;
    this.#tools = tools;
    const missing = (allowed ?? []).filter((name) => !found.has(name));
    if (missing.join() !== this.#warnedMissing) {
      this.#warnedMissing = missing.join();
      if (missing.length > 0)
        this.#options.log.warn({ server: this.name, missing }, 'MCP server lacks allowed tools');
    }
    // A server that lists again and again the same tools is warned about them once.
    const warning = skipWarning(this.name, skipped);
    const text = warning === undefined ? '' : JSON.stringify(warning);
    if (text !== this.#warnedSkipped) {
      this.#warnedSkipped = text;
      if (warning !== undefined) {
        this.#options.log.warn(warning, SKIPPED_MESSAGE);
      }
    }
  }

  /** Adds `tool` to `tools` when it may be offered, else counts it in `skipped`. */
  #offer(tool: McpTool, tools: Tool[], skipped: Skipped): void {
    const named = (list: string[]) => {
      if (list.length < WARNED_NAMES) list.push(cut(tool.name, 100));
    };
    const name = mcpToolName(this.name, tool.name);
    if (!offerableName.test(name)) {
      skipped.invalidNameCount += 1;
      named(skipped.invalidNames);
      return;
    }
    if (tools.length >= MAX_TOOLS_PER_SERVER) {
      skipped.beyondLimit += 1;
      return;
    }
    if (Buffer.byteLength(JSON.stringify(tool.inputSchema)) > MAX_INPUT_SCHEMA_BYTES) {
      skipped.largeSchemaCount += 1;
      named(skipped.largeSchemas);
      return;
    }
    tools.push({
      spec: {
        name,
        description: cut(tool.description ?? tool.title ?? tool.name, MAX_DESCRIPTION_CHARS),
        input_schema: tool.inputSchema,
      },
      call: (request) => this.#call(tool.name, request),
    });
  }

  /**
   * One call, connecting first if the connection is gone; a call that finds the connection lost (a restarted
   * server, a dead child) connects again once and is sent again, with the same idempotency key. `timeout_ms`
   * bounds each sending; connecting is bounded on its own (MIN_CONNECT_TIMEOUT_MS).
   */
  async #call(tool: string, request: ToolCallRequest): Promise<ToolOutcome> {
    request.signal.throwIfAborted();
    const input = request.input;
    if (!isJsonObject(input)) return failed('the input must be a JSON object');
    let fresh = this.#client === undefined;
    for (;;) {
      let client: Client;
      try {
        client = await unlessAborted(
          this.#client === undefined ? this.connect() : Promise.resolve(this.#client),
          request.signal,
        );
      } catch (err) {
        if (request.signal.aborted) throw request.signal.reason;
        return failed(`MCP server "${this.name}" cannot be reached: ${errorMessage(err)}`);
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
        if (this.#client === client) this.#client = undefined;
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
    // It also ends the call when its response over HTTP grows too large (boundedFetch).
    const own = new AbortController();
    const onAbort = () => own.abort(request.signal.reason);
    request.signal.addEventListener('abort', onAbort, { once: true });
    const key = idempotencyKeyOf(request);
    this.#calls.set(key, own);
    try {
      const result = await client.callTool(
        {
          name: tool,
          arguments: input,
          _meta: { [IDEMPOTENCY_META_KEY]: key },
        },
        undefined,
        { signal: own.signal, timeout: this.#config.timeout_ms },
      );
      return outcomeOf(result);
    } catch (err) {
      if (own.signal.reason instanceof ResponseTooLargeError) return tooLarge;
      throw err;
    } finally {
      request.signal.removeEventListener('abort', onAbort);
      if (this.#calls.get(key) === own) this.#calls.delete(key);
    }
  }
}

/** Connects to one MCP server and lists its tools; rejects (the connection closed) when it cannot. */
export async function connectMcpServer(config: McpServerConfig, options: McpOptions): Promise<McpToolSource> {
  const source = new McpServerConnection(config, options);
  await source.connect();
  return source;
}

/**
 * Connects to every server at once. A server that cannot be reached does not fail the start: it is logged,
 * offers no tools, and is tried again every `retryMs` (5 s) until reached or closed. Rejects only on a
 * configuration that no retry would mend: a `headers_env` variable that is not set.
 */
export async function connectMcpServers(
  configs: readonly McpServerConfig[],
  options: McpOptions,
): Promise<McpToolSource[]> {
  const sources = configs.map((config) => new McpServerConnection(config, options));
  await Promise.all(sources.map((source) => source.start(options.retryMs ?? 5_000)));
  return sources;
}
