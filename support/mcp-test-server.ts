// A real MCP server, built with the SDK's own McpServer, for the tests of Parley's MCP client: over stdio
// (`node support/mcp-test-server.ts`) or streamable HTTP with stateful sessions on 127.0.0.1
// (`node support/mcp-test-server.ts --http <port>`, 0 for any free port, which prints `listening <port>` with
// the port bound once it listens). With `--listen-when-stdin-ends` too, it prints `loaded` once ready and
// listens only when its stdin ends: a test can keep the port held until the last moment.
// MCP_TEST_MANY_TOOLS=1: a server that offers too much (over 128 tools, a bad name, a huge schema);
// MCP_TEST_JSON_RESPONSE=1: HTTP answers as JSON rather than SSE streams.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { appendFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** Set, HTTP requests must carry `Authorization: Bearer <it>` (401 otherwise): a test of `headers_env`. */
const requiredToken = process.env.MCP_TEST_TOKEN;
/** Where `record` appends `<idempotency key>\t<value>` lines, so that a test can read what the tool got. */
const recordLog = process.env.MCP_TEST_LOG;
/** Set to 1, the server offers more tools than a client may take (bounded, in mcp-listing.ts). */
const manyTools = process.env.MCP_TEST_MANY_TOOLS === '1';
/** Set to 1, HTTP responses are JSON rather than SSE streams. */
const jsonResponses = process.env.MCP_TEST_JSON_RESPONSE === '1';

/**
 * One server with the test tools; over HTTP, one per session (an McpServer serves a single transport).
 * `listed.count` is how many tools/list requests it was sent.
 */
function buildServer(listed: { count: number }): McpServer {
  const server = new McpServer({ name: 'parley-mcp-test-server', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }),
  );
  server.registerTool(
    'echo',
    { description: 'Says the text back.', inputSchema: { text: z.string() } },
    ({ text }) => ({
      content: [{ type: 'text', text }],
    }),
  );
  server.registerTool('fail', { description: 'Always fails.' }, () => ({
    isError: true,
    content: [{ type: 'text', text: 'it failed' }],
  }));
  server.registerTool(
    'record',
    {
      description: 'Records a value with the idempotency key of the call.',
      inputSchema: { value: z.string() },
    },
    async ({ value }, extra) => {
      const key = extra._meta?.['parley/idempotency_key'];
      if (recordLog !== undefined) await appendFile(recordLog, `${String(key)}\t${value}\n`);
      return { content: [{ type: 'text', text: 'recorded' }] };
    },
  );
  server.registerTool(
    'slow',
    { description: 'Answers after `ms` milliseconds.', inputSchema: { ms: z.number().int().min(0) } },
    async ({ ms }, extra) => {
      await sleep(ms, undefined, { signal: extra.signal }).catch(() => {});
      return { content: [{ type: 'text', text: 'done' }] };
    },
  );
  server.registerTool('pid', { description: "The server process's id." }, () => ({
    content: [{ type: 'text', text: String(process.pid) }],
    structuredContent: { pid: process.pid },
  }));
  server.registerTool('grow', { description: 'Adds the tool `extra`.' }, () => {
    // Registering on a connected server sends notifications/tools/list_changed.
    if (!server.isConnected() || extraRegistered.has(server))
      return { content: [{ type: 'text', text: 'grown' }] };
    extraRegistered.add(server);
    server.registerTool('extra', { description: 'Appeared after grow.' }, () => ({
      content: [{ type: 'text', text: 'extra' }],
    }));
    return { content: [{ type: 'text', text: 'grown' }] };
  });
  server.registerTool('listings', { description: 'How many times the tools were listed.' }, () => ({
    content: [{ type: 'text', text: String(listed.count) }],
    structuredContent: { listings: listed.count },
  }));
  const mark = server.registerTool('mark', { description: 'Not churned yet.' }, () => ({
    content: [{ type: 'text', text: 'marked' }],
  }));
  let churns = 0;
  server.registerTool(
    'churn',
    {
      description:
        "Says `times` times that the tool list changed, the last time changing mark's description.",
      inputSchema: { times: z.number().int().min(1) },
    },
    ({ times }) => {
      for (let i = 1; i < times; i++) void server.sendToolListChanged();
      churns += 1;
      mark.update({ description: `Churned ${churns}.` }); // sends the last notification
      return { content: [{ type: 'text', text: 'churned' }] };
    },
  );
  server.registerTool(
    'huge',
    { description: 'Answers `bytes` bytes of text.', inputSchema: { bytes: z.number().int().min(0) } },
    ({ bytes }) => ({ content: [{ type: 'text', text: 'x'.repeat(bytes) }] }),
  );
  if (manyTools) {
    server.registerTool('long', { description: 'l'.repeat(10_000) }, () => ({ content: [] }));
    server.registerTool(
      'wide',
      {
        description: 'A schema over 64 KiB.',
        inputSchema: { text: z.string().describe('w'.repeat(70_000)) },
      },
      () => ({ content: [] }),
    );
    server.registerTool('bad name', { description: 'A name providers refuse.' }, () => ({ content: [] }));
    for (let i = 0; i < 150; i++) {
      server.registerTool(`many_${String(i).padStart(3, '0')}`, { description: `Tool ${i}.` }, () => ({
        content: [],
      }));
    }
  }
  return server;
}

/** Serves the test tools on `transport`, counting the tools/list requests it brings. */
async function serve(transport: Transport): Promise<void> {
  const listed = { count: 0 };
  await buildServer(listed).connect(transport);
  const onmessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ('method' in message && message.method === 'tools/list') listed.count += 1;
    onmessage?.(message, extra);
  };
}

const extraRegistered = new WeakSet<McpServer>();

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function serveHttp(port: number, cued: boolean): Promise<void> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      if (requiredToken !== undefined && req.headers.authorization !== `Bearer ${requiredToken}`) {
        jsonRpcError(res, 401, 'Unauthorized');
        return;
      }
      const header = req.headers['mcp-session-id'];
      const sessionId = typeof header === 'string' ? header : undefined;
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const known = sessionId === undefined ? undefined : sessions.get(sessionId);
      if (known !== undefined) {
        await known.handleRequest(req, res, body);
        return;
      }
      if (sessionId !== undefined) {
        // As the spec asks of an unknown (expired, or from before a restart) session: the client starts anew.
        jsonRpcError(res, 404, 'Session not found');
        return;
      }
      if (req.method !== 'POST' || !isInitializeRequest(body)) {
        jsonRpcError(res, 400, 'No session: initialize first');
        return;
      }
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: jsonResponses,
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await serve(transport);
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) jsonRpcError(res, 500, String(err));
      else res.destroy();
    });
  });
  if (cued) {
    process.stdout.write('loaded\n');
    process.stdin.resume();
    await once(process.stdin, 'end');
  }
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  const address = http.address();
  if (address === null || typeof address === 'string') throw new Error('not listening on a TCP port');
  process.stdout.write(`listening ${address.port}\n`);
  const stop = () => {
    for (const transport of sessions.values()) void transport.close();
    http.closeAllConnections();
    http.close(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

const httpFlag = process.argv.indexOf('--http');
if (httpFlag === -1) {
  await serve(new StdioServerTransport());
} else {
  const port = Number(process.argv[httpFlag + 1]);
  if (!Number.isInteger(port) || port < 0) throw new Error('--http needs a port (0: any free one)');
  await serveHttp(port, process.argv.includes('--listen-when-stdin-ends'));
}
