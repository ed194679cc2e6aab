// The tools of an agent's MCP servers (docs/guides/tools.md#mcp-tools), through the official SDK's client: a
// connection to each server (streamable HTTP or a stdio child, mcp-transport.ts), its tools offered as
// `<server>__<tool>` (mcp-listing.ts), the list kept current on list_changed, and a connection that drops
// made again on the next call (mcp-calls.ts). A failing server gives error outcomes, never a throw.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../agents/catalogue-tools.ts';
import { errorMessage, McpCalls } from './mcp-calls.ts';
import { listTools, SKIPPED_MESSAGE } from './mcp-listing.ts';
import { headersOf, makeTransport } from './mcp-transport.ts';
import type { Tool } from './tool.ts';

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

const CLIENT_INFO = { name: 'parley', version: '0.1.0' };
/**
 * The least time a connection (start, initialize, listing) may take: a stdio child needs its runtime started,
 * which a tool's short `timeout_ms` is not meant for.
 */
const MIN_CONNECT_TIMEOUT_MS = 10_000;

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
  /** The calls of the server's tools, with those waiting for an answer. */
  readonly #calls: McpCalls;
  /** The end of a stdio child's stderr, for the warnings about it. */
  #stderrTail = '';
  #retryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(config: McpServerConfig, options: McpOptions) {
    this.name = config.name;
    this.#config = config;
    this.#options = options;
    this.#headers = headersOf(config, options.env);
    this.#calls = new McpCalls(
      {
        name: this.name,
        client: () => this.#client,
        connect: () => this.connect(),
        lost: (client) => {
          if (this.#client === client) this.#client = undefined;
        },
      },
      config.timeout_ms,
    );
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
    const transport = makeTransport(this.#config, this.#headers, {
      tooLarge: (key) => this.#calls.tooLarge(key),
      stderr: (tail) => {
        this.#stderrTail = tail;
      },
    });
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

  /** Lists the server's tools (mcp-listing.ts) and offers them, unless a newer listing or connection came first. */
  async #list(client: Client): Promise<void> {
    const listing = ++this.#listings;
    const { tools, missing, skipped } = await listTools(client, {
      server: this.name,
      allowed: this.#config.tools,
      timeoutMs: Math.max(this.#config.timeout_ms, MIN_CONNECT_TIMEOUT_MS),
      call: (tool) => (request) => this.#calls.call(tool, request),
    });
    if (listing !== this.#listings || this.#client !== client) return;
    this.#tools = tools;
    if (missing.join() !== this.#warnedMissing) {
      this.#warnedMissing = missing.join();
      if (missing.length > 0)
        this.#options.log.warn({ server: this.name, missing }, 'MCP server lacks allowed tools');
    }
    // A server that lists again and again the same tools is warned about them once.
    const text = skipped === undefined ? '' : JSON.stringify(skipped);
    if (text !== this.#warnedSkipped) {
      this.#warnedSkipped = text;
      if (skipped !== undefined) {
        this.#options.log.warn(skipped, SKIPPED_MESSAGE);
      }
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
