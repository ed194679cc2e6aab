// Which of an MCP server's tools are offered (mcp-tools.ts lists them at each connection and on
// list_changed): every page of the listing read, the catalogue's allow-list applied, and what a server sends
// bounded (docs/internals/decisions.md#every-cost-bounded): the tools per server, their names, the size of
// their descriptions and input schemas. What was left out is told in one warning.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { mcpToolName } from '../agents/catalogue-tools.ts';
import type { Tool } from './tool.ts';

/** Providers' rule for a function name (catalogue-tools.ts); a server's tool that breaks it is not offered. */
const offerableName = /^[A-Za-z0-9_-]{1,64}$/;
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
export const SKIPPED_MESSAGE =
  `MCP tools not offered: beyond ${MAX_TOOLS_PER_SERVER} per server, an invalid name, ` +
  `or an input schema over ${MAX_INPUT_SCHEMA_BYTES} bytes`;

/** What a listing asks: whose tools, which of them, how long each page may take, and how a tool is called. */
export interface ListingRequest {
  server: string;
  /** The catalogue's allow-list (the server's own names); every tool without it. */
  allowed: readonly string[] | undefined;
  timeoutMs: number;
  call: (tool: string) => Tool['call'];
}

export interface Listing {
  /** The tools offered, as `<server>__<tool>`. */
  tools: Tool[];
  /** Allow-listed names the server does not have. */
  missing: string[];
  /** The warning for what the listing left out; undefined when it left out nothing. */
  skipped: Record<string, unknown> | undefined;
}

/** Why a listing's tools were not offered. */
interface Skipped {
  beyondLimit: number;
  invalidNames: string[];
  invalidNameCount: number;
  largeSchemas: string[];
  largeSchemaCount: number;
}

/**
 * Lists every page of the server's tools and offers those allowed, within the bounds: what is held is the
 * tools offered and one page, however many the server has.
 */
export async function listTools(client: Client, request: ListingRequest): Promise<Listing> {
  const { allowed } = request;
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
        timeout: request.timeoutMs,
      });
      for (const tool of result.tools) {
        if (allowed !== undefined) {
          if (!allowed.includes(tool.name)) continue;
          found.add(tool.name);
        }
        offer(request, tool, tools, skipped);
      }
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
  }
  const missing = (allowed ?? []).filter((name) => !found.has(name));
  return { tools, missing, skipped: skipWarning(request.server, skipped) };
}

/** Adds `tool` to `tools` when it may be offered, else counts it in `skipped`. */
function offer(request: ListingRequest, tool: McpTool, tools: Tool[], skipped: Skipped): void {
  const named = (list: string[]) => {
    if (list.length < WARNED_NAMES) list.push(cut(tool.name, 100));
  };
  const name = mcpToolName(request.server, tool.name);
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
    call: request.call(tool.name),
  });
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

/** Cuts `text` to `max` characters, never between the halves of a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]) ? max - 1 : max;
  return text.slice(0, end);
}
