// The tools of each agent, as its catalogue entry names them: HTTP tools, MCP servers and the built-in
// handoff tool, made and connected at start.
import type { FastifyBaseLogger } from 'fastify';
import type { Catalogue } from '../agents/catalogue.ts';
import { type Config, ConfigError } from '../config.ts';
import { AgentTools } from './agent-tools.ts';
import { handoffTool } from './handoff-tool.ts';

/**
 * Each agent's tools: its HTTP tools, and its MCP servers connected (each module loaded only when an agent
 * has such a tool, so that a process without tools never loads undici, standardwebhooks or the MCP SDK). A
 * secret or header variable that is not set stops the start before any server is started; an MCP server
 * that is down does not stop it. Every agent's servers connect at once.
 */
export async function toolsFor(
  catalogue: Catalogue,
  config: Config,
  log: FastifyBaseLogger,
): Promise<Map<string, AgentTools>> {
  const agents = [...catalogue.values()].filter(
    (a) => a.tools.length > 0 || a.mcp_servers.length > 0 || a.handoff.enabled,
  );
  const httpTools = agents.some((a) => a.tools.length > 0) ? await import('./http-tool.ts') : null;
  const http = agents.map((agent) =>
    agent.tools.flatMap((tool) => {
      const secret = tool.secret_env === undefined ? undefined : config.toolEnv[tool.secret_env];
      if (tool.secret_env !== undefined && !secret) {
        throw new ConfigError(
          `Invalid configuration: agent ${agent.id}, tool ${tool.name} names ${tool.secret_env}, which is not set.`,
        );
      }
      return httpTools ? [httpTools.httpTool(tool, secret === undefined ? {} : { secret })] : [];
    }),
  );
  const mcp = agents.some((a) => a.mcp_servers.length > 0) ? await import('./mcp-tools.ts') : null;
  const servers = await Promise.allSettled(
    agents.map((agent) =>
      mcp && agent.mcp_servers.length > 0
        ? mcp.connectMcpServers(agent.mcp_servers, { env: config.toolEnv, log })
        : Promise.resolve([]),
    ),
  );
  const failed = servers.findIndex((s) => s.status === 'rejected');
  if (failed >= 0) {
    await Promise.all(
      servers.flatMap((s) => (s.status === 'fulfilled' ? s.value.map((source) => source.close()) : [])),
    );
    const reason = servers[failed]?.status === 'rejected' ? servers[failed].reason : undefined;
    throw new ConfigError(`Invalid configuration: agent ${agents[failed]?.id}: ${(reason as Error).message}`);
  }
  return new Map(
    agents.map((agent, i) => {
      const connected = servers[i]?.status === 'fulfilled' ? servers[i].value : [];
      const builtIn = agent.handoff.enabled ? [handoffTool] : [];
      return [agent.id, new AgentTools([...(http[i] ?? []), ...builtIn], connected)];
    }),
  );
}
