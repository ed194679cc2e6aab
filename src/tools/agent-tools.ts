// An agent's tools as the step loop sees them: its HTTP tools and the current tools of its MCP servers,
// found by name. MCP lists may change while Parley runs (a server says its list changed), so they are read
// at each step.
import type { ModelToolSpec } from '../agents/provider.ts';
import type { Tool } from './tool.ts';

/** The most tools one model call is offered. */
export const MAX_AGENT_TOOLS = 128;

/** Anything that offers tools which may change over time (an MCP server's connection). */
export interface ToolSource {
  /** An MCP server's name: its tools are `<name>__<tool>`. */
  readonly name: string;
  tools(): readonly Tool[];
  close(): Promise<void>;
}

export class AgentTools {
  readonly #fixed: readonly Tool[];
  readonly #sources: readonly ToolSource[];

  constructor(fixed: readonly Tool[], sources: readonly ToolSource[] = []) {
    this.#fixed = fixed;
    this.#sources = sources;
  }

  /**
   * Every tool offered now, at most MAX_AGENT_TOOLS (what OpenAI takes in one request); a name found twice
   * keeps its first (HTTP tools come first).
   */
  list(): Tool[] {
    const byName = new Map<string, Tool>();
    for (const tool of [...this.#fixed, ...this.#sources.flatMap((s) => s.tools())]) {
      if (byName.size === MAX_AGENT_TOOLS) break;
      if (!byName.has(tool.spec.name)) byName.set(tool.spec.name, tool);
    }
    return [...byName.values()];
  }

  specs(): ModelToolSpec[] {
    return this.list().map((tool) => tool.spec);
  }

  find(name: string): Tool | undefined {
    return this.list().find((tool) => tool.spec.name === name);
  }

  /** Whether `name` is a tool of a server that offers none now (it cannot be reached): not an unknown tool. */
  unreachable(name: string): boolean {
    return this.#sources.some((s) => name.startsWith(`${s.name}__`) && s.tools().length === 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.#sources.map((s) => s.close()));
  }
}
