// The tools of an agent's MCP servers (DESIGN §13), through the official SDK's client: streamable HTTP or a
// stdio child, the server's tools offered as `<server>__<tool>`, the list kept current on list_changed, and a
// connection that drops made again on the next call. A failing server gives error outcomes, never a throw.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  McpError,
  type Tool as McpTool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { outcomeOf } from './mcp-results.ts';
import { idempotencyKeyOf, type Tool, type ToolCallRequest, type ToolOutcome } from './tool.ts';
import { isStdioServer, type McpServerConfig, mcpToolName } from './tool-config.ts';

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
/** Providers' rule for a function name (tool-config.ts); a server's tool that breaks it is not offered. */
const offerableName = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * The least time a connection (start, initialize, listing) may take: a stdio child needs its runtime started,
 * which a tool's short `timeout_ms` is not meant for.
 */
const MIN_CONNECT_TIMEOUT_MS = 10_000;
/** A server that pages forever must not hold the listing forever. */
const MAX_LIST_PAGES = 64;
/** Kept of a stdio child's stderr, for the warning when it dies; the rest is dropped, so it cannot flood logs. */
const STDERR_TAIL_CHARS = 2_000;

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 500);
const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const failed = (message: string): ToolOutcome => ({ status: 'error', output: { error: 'failed', message } });

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
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.#list(client).catch((err: unknown) =>
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
      await this.#list(client);
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
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: this.#headers },
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

  /** Lists every page of the server's tools and offers those allowed. */
  async #list(client: Client): Promise<void> {
    const listing = ++this.#listings;
    const found: McpTool[] = [];
    if (client.getServerCapabilities()?.tools !== undefined) {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: Math.max(this.#config.timeout_ms, MIN_CONNECT_TIMEOUT_MS),
        });
        found.push(...result.tools);
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
    }
    if (listing !== this.#listings || this.#client !== client) return;
    this.#tools = this.#offer(found);
  }

  #offer(found: readonly McpTool[]): Tool[] {
    const allowed = this.#config.tools;
    const chosen = allowed === undefined ? found : found.filter((tool) => allowed.includes(tool.name));
    const missing = (allowed ?? []).filter((name) => !found.some((tool) => tool.name === name));
    if (missing.join() !== this.#warnedMissing) {
      this.#warnedMissing = missing.join();
      if (missing.length > 0)
        this.#options.log.warn({ server: this.name, missing }, 'MCP server lacks allowed tools');
    }
    const tools: Tool[] = [];
    for (const tool of chosen) {
      const name = mcpToolName(this.name, tool.name);
      if (!offerableName.test(name)) {
        this.#options.log.warn(
          { server: this.name, tool: tool.name },
          'MCP tool not offered: its name is not valid',
        );
        continue;
      }
      tools.push({
        spec: {
          name,
          description: tool.description ?? tool.title ?? tool.name,
          input_schema: tool.inputSchema,
        },
        call: (request) => this.#call(tool.name, request),
      });
    }
    return tools;
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
    const own = new AbortController();
    const onAbort = () => own.abort(request.signal.reason);
    request.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await client.callTool(
        {
          name: tool,
          arguments: input,
          _meta: { [IDEMPOTENCY_META_KEY]: idempotencyKeyOf(request) },
        },
        undefined,
        { signal: own.signal, timeout: this.#config.timeout_ms },
      );
      return outcomeOf(result);
    } finally {
      request.signal.removeEventListener('abort', onAbort);
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
