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

/**
 * Who must approve a tool's calls before they run (docs/guides/approvals.md): nobody (`none`, the default),
 * the conversation's end user or the integrator (`user`), or only the integrator (`operator`).
 */
export const approvalLevel = z.enum(['none', 'user', 'operator']);
export type ApprovalLevel = z.infer<typeof approvalLevel>;
/** Who decides a call that waits: the approval level of its tool, when it is not `none`. */
export type Approver = Exclude<ApprovalLevel, 'none'>;

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
  /** Left out, `none`: its calls run without waiting. */
  approval: approvalLevel.optional(),
});
export type HttpToolConfig = z.infer<typeof httpToolSchema>;

const mcpCommon = {
  name: serverName,
  /** Only these of the server's tools are offered (its own names); every tool without it. */
  tools: z.array(z.string().min(1).max(64)).min(1).optional(),
  /** How long one call of its tools may take. */
  timeout_ms: timeoutMs.default(15_000),
  /** Who approves calls of every tool of the server (left out, `none`), unless `approval_tools` says. */
  approval: approvalLevel.optional(),
  /** Who approves calls of the named tools (the server's own names), over `approval`. */
  approval_tools: z.record(z.string().min(1).max(64), approvalLevel).optional(),
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
  /**
   * How long a call waits for its approval before it counts as denied (reason `expired`): a day by default,
   * thirty days at most.
   */
  approval_timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 86_400)
    .default(86_400),
};

/** The name an MCP server's tool is offered under. */
export const mcpToolName = (server: string, tool: string) => `${server}__${tool}`;

/** What approverOf reads of an agent. */
type ApprovalFields = {
  tools: readonly Pick<HttpToolConfig, 'name' | 'approval'>[];
  mcp_servers: readonly Pick<McpServerConfig, 'name' | 'approval' | 'approval_tools'>[];
};

/**
 * Who must approve a call of the tool the model names `name` before it runs, or null when nobody must (a tool
 * the agent does not have included: it is answered as unknown, never run).
 */
export function approverOf(agent: ApprovalFields, name: string): Approver | null {
  const http = agent.tools.find((tool) => tool.name === name);
  if (http) return approverFor(http.approval);
  const server = agent.mcp_servers.find((s) => name.startsWith(`${s.name}__`));
  if (!server) return null;
  const tool = name.slice(server.name.length + 2);
  return approverFor(server.approval_tools?.[tool] ?? server.approval);
}

const approverFor = (level: ApprovalLevel | undefined): Approver | null =>
  level === undefined || level === 'none' ? null : level;

/** Whether any tool of the agent waits for its end user's approval (which the public family then sees). */
export const hasUserApprovals = (agent: ApprovalFields): boolean =>
  agent.tools.some((tool) => tool.approval === 'user') ||
  agent.mcp_servers.some(
    (s) => s.approval === 'user' || Object.values(s.approval_tools ?? {}).includes('user'),
  );
