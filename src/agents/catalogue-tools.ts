// How an agent's tools are declared in the catalogue (docs/guides/tools.md): HTTP tools, MCP servers
// (streamable HTTP or stdio) and the step loop's bound. zod schemas, checked at start with the rest of the
// catalogue.
import { z } from 'zod';

/** The names every provider takes for a function (OpenAI's rule, the strictest). */
const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, 1 to 64 characters');
/** An MCP server's tools are offered as `<server>__<tool>`, which must stay a valid tool name. */
const serverName = z
  .string()
  .regex(/^[A-Za-z0-9-]{1,24}$/, 'letters, digits and -, 1 to 24 characters (its tools are <name>__<tool>)');
const envName = z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'the name of an environment variable (A-Z, 0-9, _)');
const timeoutMs = z.number().int().min(100).max(600_000);

/** A JSON Schema of an object: what every provider takes as a tool's input. */
const inputSchema = z
  .record(z.string(), z.json())
  .refine((schema) => schema.type === 'object', 'must be a JSON Schema with "type": "object"')
  .default({ type: 'object', properties: {} });

export const httpToolSchema = z.strictObject({
  name: toolName,
  description: z.string().min(1).max(4000),
  input_schema: inputSchema,
  url: z.url({ protocol: /^https?$/ }),
  timeout_ms: timeoutMs.default(15_000),
  /** The variable holding the Standard Webhooks secret (`whsec_…`) calls are signed with; unsigned without. */
  secret_env: envName.optional(),
});
export type HttpToolConfig = z.infer<typeof httpToolSchema>;

const mcpCommon = {
  name: serverName,
  /** Only these of the server's tools are offered (its own names); every tool without it. */
  tools: z.array(z.string().min(1).max(64)).min(1).optional(),
  /** How long one call of its tools may take. */
  timeout_ms: timeoutMs.default(15_000),
};

export const mcpHttpServerSchema = z.strictObject({
  ...mcpCommon,
  url: z.url({ protocol: /^https?$/ }),
  /** Request headers whose values are read from environment variables: `{ Authorization: MCP_TOKEN }`. */
  headers_env: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'a header name'), envName).optional(),
});

export const mcpStdioServerSchema = z.strictObject({
  ...mcpCommon,
  command: z.string().min(1).max(1000),
  args: z.array(z.string().max(4000)).max(100).default([]),
  /** The child's environment beyond the MCP SDK's safe defaults (PATH, HOME, …). */
  env: z.record(envName, z.string().max(10_000)).optional(),
});

export const mcpServerSchema = z.union([mcpHttpServerSchema, mcpStdioServerSchema]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type McpHttpServerConfig = z.infer<typeof mcpHttpServerSchema>;
export type McpStdioServerConfig = z.infer<typeof mcpStdioServerSchema>;

export const isStdioServer = (server: McpServerConfig): server is McpStdioServerConfig => 'command' in server;

/** The catalogue fields of an agent's tools. */
export const agentToolFields = {
  tools: z.array(httpToolSchema).max(128).default([]),
  mcp_servers: z.array(mcpServerSchema).max(16).default([]),
  /**
   * Model calls that may ask for tools in one turn; then one more without tools
   * (docs/internals/decisions.md#the-durable-step-loop).
   */
  max_steps: z.number().int().min(1).max(32).default(8),
  /** Whether the public family sees the turn's tool calls (SSE tool events, `tool_calls`). */
  expose_tools: z.boolean().default(false),
};

/** The name an MCP server's tool is offered under. */
export const mcpToolName = (server: string, tool: string) => `${server}__${tool}`;
