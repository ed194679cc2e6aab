// The agent catalogue: which agents exist and how each one talks (provider, model, prompt, inactivity
// messages, session lifetime, limits). Read from PARLEY_AGENTS_FILE (YAML or JSON) or the built-in `demo`.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../config.ts';
import { agentIdSchema } from './agent-id.ts';
import { agentToolFields } from './catalogue-tools.ts';
import { pricingSchema } from './pricing.ts';

/** The built-in tool an agent with `handoff.enabled` offers its model (tools/handoff-tool.ts). */
export const HANDOFF_TOOL = 'handoff_to_human';

const units: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds, as a number or a string like `90s`, `30m`, `24h`, `7d`. */
const duration = z.union([
  z
    .number()
    .int()
    .min(1)
    .max(365 * 86_400),
  z
    .string()
    .regex(/^\d+[smhd]$/, 'a duration like 90s, 30m, 24h or 7d')
    .transform((v) => Number(v.slice(0, -1)) * (units[v.slice(-1)] ?? 1)),
]);

const agentFields = z.strictObject({
  id: agentIdSchema,
  name: z.string().min(1).max(200).optional(),
  /** What the agent is for, as GET /v1/agents shows it (an operator console's list); never sent to the model. */
  description: z.string().min(1).max(2000).optional(),
  instructions: z.string().max(100_000).default(''),
  provider: z.enum(['scripted', 'openai', 'openai-compatible', 'anthropic']).default('scripted'),
  /**
   * Required for every provider but `scripted` (docs/internals/decisions.md#providers-and-model-settings): a
   * default would be sent as a model name.
   */
  model: z.string().min(1).max(200).optional(),
  /**
   * The API's base URL: openai's default is OPENAI_BASE_URL, else https://api.openai.com/v1; anthropic's
   * https://api.anthropic.com/v1; openai-compatible has none (required).
   */
  base_url: z.url().optional(),
  /** The environment variable holding the API key (default OPENAI_API_KEY, ANTHROPIC_API_KEY; none). */
  api_key_env: z
    .string()
    .regex(/^[A-Z][A-Z0-9_]*_API_KEY$/, 'must name an environment variable ending in _API_KEY')
    .optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  /** Sequences that end the reply where they appear (4 at most: OpenAI's limit). */
  stop: z.array(z.string().min(1).max(200)).min(1).max(4).optional(),
  seed: z.number().int().optional(),
  /** Passed through to the provider as the AI SDK's providerOptions: `{ openai: {...} }`, `{ anthropic: {...} }`. */
  provider_options: z.record(z.string(), z.record(z.string(), z.json())).optional(),
  /**
   * Tokens kept free for the reply, and sent as the reply's limit
   * (docs/internals/decisions.md#providers-and-model-settings).
   */
  max_tokens: z.number().int().min(1).max(1_000_000).default(1024),
  /** What the model costs, for usage and budgets (src/agents/pricing.ts); absent, calls cost 0. */
  pricing: pricingSchema.optional(),
  /** Tokens the model takes, prompt and reply: the history is trimmed to fit (context-window.ts). */
  context_window: z.number().int().min(256).max(10_000_000).default(8192),
  scripted: z.strictObject({ token_delay_ms: z.number().int().min(0).max(10_000).default(0) }).default({
    token_delay_ms: 0,
  }),
  inactivity: z
    .strictObject({
      warning_message: z
        .string()
        .min(1)
        .max(32_000)
        .default('Are you still there? This conversation will close soon.'),
      final_message: z
        .string()
        .min(1)
        .max(32_000)
        .default('This conversation was closed after a period of inactivity.'),
      close_on_final: z.boolean().default(true),
    })
    .default({
      warning_message: 'Are you still there? This conversation will close soon.',
      final_message: 'This conversation was closed after a period of inactivity.',
      close_on_final: true,
    }),
  /** Seconds without activity after which a session expires. */
  session_ttl: duration.default(86_400),
  /** How many of the latest messages the model sees. */
  history_limit: z.number().int().min(1).max(1000).default(50),
  limits: z
    .strictObject({ messages_per_session: z.number().int().min(2).max(100_000).default(1000) })
    .default({ messages_per_session: 1000 }),
  timeouts: z
    .strictObject({
      total_ms: z.number().int().min(100).max(3_600_000).default(60_000),
      stall_ms: z.number().int().min(100).max(3_600_000).default(20_000),
    })
    .default({ total_ms: 60_000, stall_ms: 20_000 }),
  /**
   * People may take the agent's conversations over (docs/guides/humans.md): `enabled` gives its model the
   * handoff_to_human tool, `user_can_request` lets the end user ask for a human.
   */
  handoff: z
    .strictObject({
      enabled: z.boolean().default(false),
      user_can_request: z.boolean().default(false),
    })
    .default({ enabled: false, user_can_request: false }),
  ...agentToolFields,
  // Checked on each list, not on the agent, so that they are reported even when another field is wrong.
  tools: agentToolFields.tools.superRefine((tools, ctx) => {
    uniqueNames('tool', tools, ctx);
    for (const [i, tool] of tools.entries()) {
      if (tool.name.includes('__')) {
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: 'must not contain __, which is reserved for MCP tools (<server>__<tool>)',
        });
      }
    }
  }),
  mcp_servers: agentToolFields.mcp_servers.superRefine((servers, ctx) => {
    uniqueNames('MCP server', servers, ctx);
    for (const [i, server] of servers.entries()) approvalsOffered(server, i, ctx);
  }),
});

/** An approval for a tool the server's allow-list leaves out would never apply: a mistake, said at start. */
function approvalsOffered(
  server: { tools?: string[] | undefined; approval_tools?: Record<string, unknown> | undefined },
  i: number,
  ctx: z.RefinementCtx<unknown>,
) {
  if (!server.tools || !server.approval_tools) return;
  for (const tool of Object.keys(server.approval_tools)) {
    if (server.tools.includes(tool)) continue;
    ctx.addIssue({
      code: 'custom',
      path: [i, 'approval_tools', tool],
      message: `names ${tool}, which the server's tools list leaves out (${server.tools.join(', ')})`,
    });
  }
}

/** One agent's tools (or MCP servers) are told apart by name: the model calls them by it. */
function uniqueNames(what: string, items: readonly { name: string }[], ctx: z.RefinementCtx<unknown>) {
  const first = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    const earlier = first.get(item.name);
    if (earlier === undefined) first.set(item.name, i);
    else {
      ctx.addIssue({
        code: 'custom',
        path: [i, 'name'],
        message: `duplicate ${what} name ${item.name} (item ${earlier} has it too)`,
      });
    }
  }
}

/** An agent whose reply reserve takes its whole window could answer nothing: refused at start. */
function replyLeavesRoom(
  agent: { max_tokens: number; context_window: number },
  ctx: z.RefinementCtx<{ max_tokens: number; context_window: number }>,
) {
  if (agent.max_tokens < agent.context_window) return;
  ctx.addIssue({
    code: 'custom',
    path: ['max_tokens'],
    message: `must be less than context_window (${agent.context_window}), which holds the prompt too`,
  });
}

const agentSchema = agentFields
  .superRefine(replyLeavesRoom)
  .superRefine((agent, ctx) => {
    if (agent.provider === 'openai-compatible' && agent.base_url === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['base_url'],
        message: 'required for provider openai-compatible (the server to call)',
      });
    }
    if (agent.handoff.enabled && agent.tools.some((tool) => tool.name === HANDOFF_TOOL)) {
      ctx.addIssue({
        code: 'custom',
        path: ['tools'],
        message: `must not name a tool ${HANDOFF_TOOL}: handoff.enabled gives the agent that tool`,
      });
    }
    if (agent.provider !== 'scripted' && agent.model === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['model'],
        message: `required for provider ${agent.provider} (the model name the provider is sent)`,
      });
    }
  })
  .transform(({ model, ...agent }) => ({ ...agent, model: model ?? 'scripted' }));

export type AgentConfig = z.infer<typeof agentSchema>;

const catalogueSchema = z.strictObject({
  agents: z
    .array(agentSchema)
    .min(1)
    .superRefine((agents, ctx) => {
      const seen = new Set<string>();
      for (const [i, agent] of agents.entries()) {
        if (seen.has(agent.id))
          ctx.addIssue({ code: 'custom', path: [i, 'id'], message: 'duplicate agent id' });
        seen.add(agent.id);
      }
    }),
});

export const demoAgent: AgentConfig = {
  ...agentSchema.parse({
    id: 'demo',
    name: 'Demo',
    instructions: 'You are a friendly demo agent. Answer briefly.',
  }),
  // Its scripted model has no window: the demo sends any history a turn reads (a catalogue cannot say
  // this; its agents have a window) and never loads the tokenizer.
  context_window: Number.POSITIVE_INFINITY,
};

export type Catalogue = ReadonlyMap<string, AgentConfig>;

/**
 * Parses a catalogue document (YAML is a superset of JSON); throws ConfigError with one line per mistake,
 * each naming its field, so that a bad file is fixed in one go rather than one restart per mistake.
 */
export function parseCatalogue(text: string, source = 'the agents file'): Catalogue {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${source} is not YAML or JSON: ${(err as Error).message}`);
  }
  const parsed = catalogueSchema.safeParse(document, { error: missingIsRequired });
  if (!parsed.success) {
    const lines = parsed.error.issues.flatMap((issue) => mistakes(issue, []));
    if (lines.length === 1) throw new ConfigError(`Invalid configuration: ${source}, ${lines[0]}`);
    throw new ConfigError(
      [
        `Invalid configuration: ${source} has ${lines.length} mistakes:`,
        ...lines.map((line) => `${source}, ${line}`),
      ].join('\n'),
    );
  }
  return new Map(parsed.data.agents.map((a) => [a.id, Object.freeze(a)]));
}

/** zod's "expected string, received undefined" for a field that is not there. */
const missingIsRequired = (issue: { code?: string; input?: unknown }) =>
  issue.code === 'invalid_type' && issue.input === undefined ? 'required' : undefined;

/**
 * The lines `<path>: <message>` of one issue. A value that fits none of a union's forms (an MCP server is
 * `url` or `command`) is told by the form it comes closest to, or, when several are as close, in one line.
 */
function mistakes(issue: z.core.$ZodIssue, prefix: PropertyKey[]): string[] {
  const path = [...prefix, ...issue.path];
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) {
    return [`${where(path)}: ${issue.message}`];
  }
  const fewest = Math.min(...issue.errors.map((branch) => branch.length));
  const closest = issue.errors.filter((branch) => branch.length === fewest);
  if (closest.length === 1 && closest[0]) return closest[0].flatMap((inner) => mistakes(inner, path));
  const singles = closest.flatMap((branch) => (branch.length === 1 ? branch : []));
  if (singles.length === closest.length) {
    // Each form lacks one field: the value has none of the fields that tell the forms apart.
    if (singles.every((inner) => inner.code === 'invalid_type' && inner.message === 'required')) {
      return [`${where(path)}: needs one of ${singles.map((inner) => inner.path.join('.')).join(', ')}`];
    }
    // Each form refuses one field of another: the value mixes them.
    if (singles.every((inner) => inner.code === 'unrecognized_keys' && inner.path.length === 0)) {
      const keys = singles.flatMap((inner) => (inner.code === 'unrecognized_keys' ? inner.keys : []));
      return [
        `${where(path)}: has ${keys.toSorted().join(' and ')}, which belong to different forms; keep one`,
      ];
    }
  }
  const forms = closest.map((branch) =>
    branch
      .map((inner) => (inner.path.length ? `${where(inner.path)}: ${inner.message}` : inner.message))
      .join(', '),
  );
  return [`${where(path)}: fits none of its forms (${forms.join('; or ')})`];
}

const where = (path: PropertyKey[]) => path.map(String).join('.') || 'document';

/** The catalogue the configuration names, or the built-in `demo` agent alone. */
export function loadCatalogue(file: string | undefined): Catalogue {
  if (!file) return new Map([[demoAgent.id, demoAgent]]);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `Invalid configuration: PARLEY_AGENTS_FILE cannot be read: ${(err as Error).message}`,
    );
  }
  return parseCatalogue(text, `PARLEY_AGENTS_FILE (${file})`);
}
