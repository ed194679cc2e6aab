// GET /v1/agents: the agents an API key may use, as an operator console or a back office lists them: what each
// is, its provider, its tools and who approves their calls, and whether people may take its conversations
// over. A key scoped to some agents sees only those. Secrets stay out (keys, base URLs, MCP headers,
// commands and environment); MCP servers are described as the catalogue configures them, without connecting.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { agentList, type agentMcpServerSchema, type agentSchema, authErrors } from '#schemas';
import { type AgentConfig, type Catalogue, HANDOFF_TOOL } from '../../agents/catalogue.ts';
import { isStdioServer, type McpServerConfig, mcpToolName } from '../../agents/catalogue-tools.ts';
import { scopeAllows } from '../../auth/api-keys.ts';

type Agent = z.output<typeof agentSchema>;
type McpServer = z.output<typeof agentMcpServerSchema>;

/** An MCP server as the catalogue names it: its allow-list, or else the tools given their own approval. */
function mcpServerOf(server: McpServerConfig): McpServer {
  const approval = server.approval ?? 'none';
  const named = server.tools ?? Object.keys(server.approval_tools ?? {});
  return {
    name: server.name,
    transport: isStdioServer(server) ? 'stdio' : 'http',
    all_tools: server.tools === undefined,
    approval,
    tools: named.map((tool) => ({
      name: mcpToolName(server.name, tool),
      approval: server.approval_tools?.[tool] ?? approval,
    })),
  };
}

/** The agent as GET /v1/agents shows it. */
export function agentView(agent: AgentConfig): Agent {
  const tools = agent.tools.map((tool) => ({ name: tool.name, approval: tool.approval ?? 'none' }));
  if (agent.handoff.enabled) tools.push({ name: HANDOFF_TOOL, approval: 'none' });
  return {
    id: agent.id,
    name: agent.name ?? null,
    description: agent.description ?? null,
    provider: agent.provider,
    model: agent.model ?? null,
    tools,
    mcp_servers: agent.mcp_servers.map(mcpServerOf),
    expose_tools: agent.expose_tools,
    handoff: { enabled: agent.handoff.enabled, user_can_request: agent.handoff.user_can_request },
  };
}

export const agentsRoutes: FastifyPluginAsyncZod<{ catalogue: Catalogue }> = async (app, { catalogue }) => {
  app.get(
    '/v1/agents',
    {
      schema: {
        tags: ['agents'],
        summary: 'List the agents this API key may use, in catalogue order',
        response: { 200: agentList, ...authErrors },
      },
    },
    async (request) => {
      const scope = request.apiKey?.agents ?? [];
      const items = [...catalogue.values()].filter((a) => scopeAllows(scope, a.id)).map(agentView);
      return { items };
    },
  );
};
